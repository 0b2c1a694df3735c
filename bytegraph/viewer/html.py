"""The trace as one self-contained HTML page that works offline.

The page is assets/page.html with its stylesheet and script inlined and the trace embedded
as JSON. The script builds every element with textContent, never innerHTML, so values such
as `<lambda>` show as text; the JSON itself is escaped so that no `</script>` inside a
value can end the script element early.
"""

from __future__ import annotations

import builtins
import html
import io
import json
import keyword
import re
import tokenize
from importlib import resources
from pathlib import Path

from bytegraph.viewer.model import WRITERS, Trace

_PLACEHOLDER = re.compile(r"\{\{(?:TITLE|STYLE|SCRIPT|DATA)\}\}")
_BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_"))


def _asset(name: str) -> str:
    return resources.files("bytegraph.viewer").joinpath("assets", name).read_text(encoding="utf-8")


def _token_class(token: tokenize.TokenInfo) -> str:
    if token.type == tokenize.NAME:
        if keyword.iskeyword(token.string) or keyword.issoftkeyword(token.string):
            return "kw"
        return "bi" if token.string in _BUILTINS else ""
    return {tokenize.STRING: "str", tokenize.NUMBER: "lit", tokenize.COMMENT: "com"}.get(token.type, "")


def highlight_python(lines: list[str]) -> list[list[list[str]]]:
    """Each source line as [css class, text] runs for the source panel.

    Python's own tokenizer finds keywords, strings, numbers and comments; code it cannot
    tokenize (a fragment cut out of a larger file) is shown plain.
    """
    classes = [[""] * len(line) for line in lines]
    try:
        for token in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            kind = _token_class(token)
            if not kind:
                continue
            (start_row, start_col), (end_row, end_col) = token.start, token.end
            for row in range(start_row - 1, min(end_row, len(lines))):
                first = start_col if row == start_row - 1 else 0
                last = end_col if row == end_row - 1 else len(lines[row])
                for column in range(first, min(last, len(lines[row]))):
                    classes[row][column] = kind
    except (tokenize.TokenError, IndentationError, SyntaxError):
        classes = [[""] * len(line) for line in lines]
    return [_runs(line, line_classes) for line, line_classes in zip(lines, classes)]


def _runs(line: str, classes: list[str]) -> list[list[str]]:
    runs: list[list[str]] = []
    for char, kind in zip(line, classes):
        if runs and runs[-1][0] == kind:
            runs[-1][1] += char
        else:
            runs.append([kind, char])
    return runs


def page_data(trace: Trace) -> dict:
    """The trace as the page's script reads it: `Trace.to_dict()` plus highlighted source.

    Every step carries the whole graph so far, so the same node rows repeat step after
    step; the page stores each distinct row once in `nodes` and steps list row numbers.
    """
    data = trace.to_dict()
    nodes: dict[str, int] = {}
    for frame in data["frames"]:
        frame["source_runs"] = highlight_python(frame["source_lines"])
        for step in frame["steps"]:
            step["graph"] = [nodes.setdefault(node, len(nodes)) for node in step["graph"]]
    data["nodes"] = list(nodes)
    return data


def _script_safe_json(data: dict) -> str:
    # Inside <script>, "</" could close the element and "<!--" open a comment; escaping
    # <, > and & as \u sequences keeps the JSON identical once parsed.
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_html(trace: Trace) -> str:
    page = _asset("page.html")
    replacements = {
        "{{TITLE}}": html.escape(f"bytegraph trace: {trace.title}"),
        "{{STYLE}}": _asset("page.css"),
        "{{SCRIPT}}": _asset("page.js"),
        "{{DATA}}": _script_safe_json(page_data(trace)),
    }
    # One pass, so text inserted by one replacement is never searched by the next.
    return _PLACEHOLDER.sub(lambda match: replacements[match.group(0)], page)


def write_html(trace: Trace, path) -> None:
    Path(path).write_text(render_html(trace), encoding="utf-8")


WRITERS["html"] = write_html
