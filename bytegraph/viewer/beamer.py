"""LaTeX beamer slides: one frame per step, in the columns of the hand-made slides.

Left: the bytecode listing with the current instruction on a coloured band. Right: the
step's note, the instruction counter, the value stack and the output graph. The listing is
typeset with \\texttt lines and \\colorbox rather than minted or verbatim, so the document
compiles with plain pdflatex (no -shell-escape) and every frame can stay non-fragile.
"""

from __future__ import annotations

from pathlib import Path

from bytegraph.viewer.listing import bytecode_listing, split_node_row, window
from bytegraph.viewer.model import WRITERS, FrameTrace, Step, Trace

LISTING_ROWS = 34  # lines of bytecode that fit a \tiny column on a 16:9 slide
STACK_ROWS = 10
GRAPH_ROWS = 12

_PREAMBLE = r"""\documentclass[aspectratio=169,10pt]{beamer}
\usetheme{default}
\setbeamertemplate{navigation symbols}{}
\definecolor{bgcurrent}{HTML}{FFC9D6}
\definecolor{bgnew}{HTML}{DDF3DD}
\newcommand{\bgline}[1]{\mbox{\strut#1}\par}
\newcommand{\bgcurrentline}[1]{{\setlength{\fboxsep}{0pt}\colorbox{bgcurrent}{\makebox[\linewidth][l]{\strut#1}}}\par}
\newsavebox{\bgbox}
% Shrink a table to the column only when it is wider than the column.
\newcommand{\bgfit}[1]{\sbox{\bgbox}{#1}\ifdim\wd\bgbox>\linewidth\resizebox{\linewidth}{!}{\usebox{\bgbox}}\else\usebox{\bgbox}\fi}
\title{Tracing TITLE}
\date{}
\begin{document}
"""

# In the typewriter font every printable ASCII character has its own glyph, so special
# characters are typed by code; other fonts need the named text commands.
_TT_SPECIAL = {char: f"\\char{ord(char)}{{}}" for char in "\\{}$&#^_%~'`\"<>|"}
_TEXT_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "^": r"\textasciicircum{}",
    "_": r"\_",
    "%": r"\%",
    "~": r"\textasciitilde{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "`": r"\textasciigrave{}",  # ` and ' would otherwise become curly quotes
    "'": r"\textquotesingle{}",
}
_UNICODE = {"\N{RIGHTWARDS ARROW}": "->", "\N{HORIZONTAL ELLIPSIS}": "...", "\N{EM DASH}": "---", "\N{EN DASH}": "--"}


def _ascii(text: str) -> str:
    # pdflatex's default fonts cover ASCII only; anything else would stop the build.
    text = "".join(_UNICODE.get(char, char) for char in text)
    return "".join(char if 32 <= ord(char) < 127 else "?" for char in text.replace("\t", " ").replace("\n", " "))


def latex_tt(text: str) -> str:
    """Text for the typewriter font: specials typed by code, each space a fixed-width tie."""
    return "".join("~" if char == " " else _TT_SPECIAL.get(char, char) for char in _ascii(text))


def latex_text(text: str) -> str:
    """Text for the roman font, with LaTeX's special characters escaped."""
    return "".join(_TEXT_SPECIAL.get(char, char) for char in _ascii(text))


def _listing(frame: FrameTrace, step: Step) -> str:
    lines, index_of_offset = bytecode_listing(frame)
    current = index_of_offset.get(step.offset, -1)
    shown = window(len(lines), max(current, 0), LISTING_ROWS)
    out = [r"{\tiny\ttfamily\setlength{\parskip}{0pt}\setlength{\parindent}{0pt}"]
    if shown.start > 0:
        out.append(r"\bgline{~~~~...}")
    for index in shown:
        macro = r"\bgcurrentline" if index == current else r"\bgline"
        out.append(f"{macro}{{{latex_tt(lines[index])}}}")
    if shown.stop < len(lines):
        out.append(r"\bgline{~~~~...}")
    out.append("}")
    return "\n".join(out)


def _table(header: list[str], rows: list[list[str]], skipped: int) -> str:
    columns = max([len(header)] + [len(row) + 1 for row in rows])
    spec = "r" + "l" * (columns - 1)
    out = [f"\\bgfit{{\\begin{{tabular}}{{{spec}}}", r"\hline"]
    out.append(" & ".join(f"\\textbf{{{latex_text(cell)}}}" for cell in header) + r" \\ \hline")
    if skipped:
        out.append(f"\\multicolumn{{{columns}}}{{l}}{{\\textit{{{skipped} earlier}}}} \\\\")
    for index, row in rows:
        cells = [f"\\texttt{{{latex_tt(cell)}}}" for cell in row]
        if len(cells) < columns - 1:  # a row that did not split spans the remaining columns
            cells[-1] = f"\\multicolumn{{{columns - len(cells)}}}{{l}}{{{cells[-1]}}}"
        out.append(" & ".join([str(index)] + cells) + r" \\")
    out.append(r"\hline\end{tabular}}")
    return "\n".join(out)


def _stack_table(step: Step) -> str:
    if not step.stack:
        return r"\textit{(empty)}"
    shown = window(len(step.stack), len(step.stack) - 1, STACK_ROWS)
    rows = [(index, [step.stack[index]]) for index in shown]
    return _table(["id", "values"], rows, shown.start)


def _graph_table(step: Step) -> str:
    if not step.graph:
        return r"\textit{(no nodes yet)}"
    shown = window(len(step.graph), len(step.graph) - 1, GRAPH_ROWS)
    rows = [(index, split_node_row(step.graph[index])) for index in shown]
    return _table(["id", "opcode", "name", "target", "args", "kwargs"], rows, shown.start)


def _slide(index: int, frame: FrameTrace, number: int, step: Step) -> str:
    title = f"Tracing \\texttt{{{latex_tt(frame.name)}}} ({latex_text(frame.kind)} frame {index}) --- step {number}"
    note = latex_text(step.note) if step.note else r"\textit{(no note)}"
    instruction = latex_tt(f"{step.opname} {step.argrepr}".strip())
    return "\n".join(
        [
            r"\begin{frame}[t]",
            f"\\frametitle{{{title}}}",
            r"\begin{columns}[T]",
            r"\begin{column}{0.5\textwidth}",
            _listing(frame, step),
            r"\end{column}",
            r"\begin{column}{0.48\textwidth}",
            r"\begin{block}{Step}\small " + note + r"\end{block}",
            r"\begin{block}{Instruction counter}\small " + f"{step.offset}: \\texttt{{{instruction}}}" + r"\end{block}",
            r"\begin{block}{Frame stack}\tiny",
            _stack_table(step),
            r"\end{block}",
            r"\begin{block}{Output graph}\tiny",
            _graph_table(step),
            r"\end{block}",
            r"\end{column}",
            r"\end{columns}",
            r"\end{frame}",
            "",
        ]
    )


def render_beamer(trace: Trace) -> str:
    parts = [_PREAMBLE.replace("TITLE", f"\\texttt{{{latex_tt(trace.title)}}}")]
    for index, frame in enumerate(trace.frames):
        for number, step in enumerate(frame.steps):
            parts.append(_slide(index, frame, number, step))
    if not any(frame.steps for frame in trace.frames):
        parts.append("\\begin{frame}\\frametitle{No steps were recorded}\\end{frame}\n")
    parts.append("\\end{document}\n")
    return "\n".join(parts)


def write_beamer(trace: Trace, path) -> None:
    Path(path).write_text(render_beamer(trace), encoding="utf-8")


WRITERS["beamer"] = write_beamer
