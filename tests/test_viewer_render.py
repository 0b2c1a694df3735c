"""The trace renderers: org-mode and LaTeX beamer slides, the HTML page's file, the command line."""

import json
import re
import shutil
import subprocess
import sys

import pytest

import bytegraph
from bytegraph.__main__ import main as bytegraph_main
from bytegraph.viewer import TraceRecorder
from bytegraph.viewer.beamer import latex_text, latex_tt, render_beamer
from bytegraph.viewer.html import highlight_python, page_data, render_html
from bytegraph.viewer.org import render_org
from test_viewer_model import build_sample_trace, requires_sample_bytecode

NASTY = r"<lambda> </script><b>bold</b> a_b & 50% $x$ #1 {y} ~z ^w \back | bar `q' \"d\" -> done"


def nasty_trace():
    """The sample trace plus a frame whose name, values and note hold every special character."""
    trace = build_sample_trace()
    recorder = TraceRecorder()
    frame = recorder.begin_frame("<lambda>", (lambda: 0).__code__, "original")
    recorder.step(frame, 0, "RESUME", "", None, [NASTY], {"k|ey": NASTY}, ["call_function  f  <lambda>  (x,)  {}"], NASTY)
    trace.frames.extend(recorder.trace().frames)
    return trace


def steps_of(trace):
    return [(index, number, step) for index, frame in enumerate(trace.frames) for number, step in enumerate(frame.steps)]


# ---- org-mode ----------------------------------------------------------------------------

ORG_BLOCK = re.compile(
    r"\*\* Tracing (?P<name>[^\n]*) \(step (?P<step>\d+)\) :B_block:\n.*?"
    r"\\begin\{minted\}\[highlightlines=(?P<highlight>\d+), highlightcolor=pink\]\{python\}\n(?P<listing>.*?)\n\\end\{minted\}"
    r".*?\*\*\*\*\* Instruction counter\n\\small\n\n(?P<offset>\d+)\n"
    r".*?\|---\+--------\|\n\| id \| values \|\n\|---\+--------\|\n(?P<stack>(?:\|[^\n]*\|\n)*)"
    r".*?\|  id \| ops \|\n\|---\+-----\|\n(?P<graph>(?:\|[^\n]*\|\n)*)",
    re.S,
)


@requires_sample_bytecode
def test_org_has_one_block_per_step_highlighting_its_instruction():
    trace = build_sample_trace()
    blocks = list(ORG_BLOCK.finditer(render_org(trace)))
    expected = steps_of(trace)
    assert len(blocks) == len(expected)
    for block, (index, number, step) in zip(blocks, expected):
        assert block["name"] == trace.frames[index].name and int(block["step"]) == number
        listing = block["listing"].split("\n")
        highlighted = listing[int(block["highlight"]) - 1].split()  # minted counts from 1
        assert str(step.offset) in highlighted and step.opname in highlighted
        assert int(block["offset"]) == step.offset
        assert block["stack"].count("\n") == len(step.stack)
        assert block["graph"].count("\n") == len(step.graph)
        for value in step.stack:
            assert f"~{value}~" in block["stack"]


@requires_sample_bytecode
def test_org_highlight_follows_the_seed_layout():
    # The seed's listing for the same kind of function put LOAD_CONST 0 on line 1, its
    # STORE_FAST on line 2 and the next source line after a blank line; RESUME comes first here.
    trace = build_sample_trace()
    highlights = [int(block["highlight"]) for block in ORG_BLOCK.finditer(render_org(trace))][:5]
    assert highlights == [1, 3, 4, 6, 7]


@requires_sample_bytecode
def test_org_cells_never_split_on_a_bar():
    text = render_org(nasty_trace())
    block = list(ORG_BLOCK.finditer(text))[-1]
    for row in block["stack"].splitlines() + block["graph"].splitlines():
        assert row.count("|") == 3


# ---- LaTeX beamer ------------------------------------------------------------------------


@requires_sample_bytecode
def test_beamer_has_one_frame_per_step_with_one_highlighted_instruction():
    trace = build_sample_trace()
    text = render_beamer(trace)
    frames = text.split(r"\begin{frame}[t]")[1:]
    assert len(frames) == len(steps_of(trace))
    for frame_text, (_, _, step) in zip(frames, steps_of(trace)):
        current = re.findall(r"\\bgcurrentline\{(.*)\}", frame_text)
        assert len(current) == 1
        fields = current[0].split("~")
        assert str(step.offset) in fields and latex_tt(step.opname) in fields
        assert f"\\begin{{block}}{{Instruction counter}}\\small {step.offset}:" in frame_text


def test_latex_escaping_leaves_no_special_character_bare():
    commands = r"\\[a-z]+\{\}|\\char\d+\{\}|\\[{}$&#_%]"
    # In the typewriter listing every space is typed as a tie (~) on purpose.
    for escaped, ties in ((latex_text(NASTY), ""), (latex_tt(NASTY), "~")):
        bare = re.sub(commands, "", escaped)
        if ties:
            bare = bare.replace(ties, "")
        assert not set(bare) & set("\\{}$&#^_%~<>|"), bare
    assert latex_tt("a  b") == "a~~b"  # spaces keep their width in the listing


def _pdflatex():
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed (apt-get install texlive-latex-recommended texlive-pictures)")
    found = subprocess.run(["kpsewhich", "beamer.cls", "pgfcore.sty"], capture_output=True, text=True).stdout.split()
    if len(found) < 2:
        pytest.skip("the beamer class or pgf is not installed (apt-get install texlive-latex-recommended texlive-pictures)")


@requires_sample_bytecode
def test_beamer_compiles_with_pdflatex(tmp_path):
    _pdflatex()
    trace = nasty_trace()
    (tmp_path / "slides.tex").write_text(render_beamer(trace))
    result = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "slides.tex"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    log = (tmp_path / "slides.log").read_text(errors="replace")
    assert result.returncode == 0, log[-3000:]
    pages = int(re.search(r"Output written on slides\.pdf \((\d+) pages?", log).group(1))
    assert pages == len(steps_of(trace))
    if shutil.which("pdftotext"):  # the note with every special character reads back as typed
        subprocess.run(["pdftotext", "-f", str(pages), "-l", str(pages), "slides.pdf", "last.txt"], cwd=tmp_path, check=True)
        text = " ".join((tmp_path / "last.txt").read_text().split())
        assert "<lambda> </script><b>bold</b> a_b & 50% $x$ #1 {y} ~z ^w \\back | bar" in text


# ---- the HTML file -----------------------------------------------------------------------


def embedded_data(page):
    match = re.search(r'<script id="trace-data" type="application/json">(.*?)</script>', page, re.S)
    return json.loads(match.group(1))


@requires_sample_bytecode
def test_html_embeds_the_trace_so_that_no_value_can_end_the_script():
    trace = nasty_trace()
    page = render_html(trace)
    assert page.count("</script>") == 2  # the data's and the code's, none from the values
    assert embedded_data(page) == json.loads(json.dumps(page_data(trace)))
    assert embedded_data(page)["frames"][-1]["steps"][0]["note"] == NASTY


@requires_sample_bytecode
def test_html_stores_each_graph_row_once():
    trace = build_sample_trace()
    data = embedded_data(render_html(trace))
    distinct = {node for frame in trace.frames for step in frame.steps for node in step.graph}
    assert sorted(data["nodes"]) == sorted(distinct)
    for frame, frame_data in zip(trace.frames, data["frames"]):
        for step, step_data in zip(frame.steps, frame_data["steps"]):
            assert [data["nodes"][index] for index in step_data["graph"]] == step.graph


@requires_sample_bytecode
def test_html_is_self_contained():
    page = render_html(build_sample_trace())
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=", page)
    assert "{{" not in page.replace("{{DATA}}", "")  # every placeholder was filled
    assert "<title>bytegraph trace: sample_fn</title>" in page


@requires_sample_bytecode
def test_html_title_is_escaped(tmp_path):
    trace = nasty_trace()
    trace.frames.insert(0, trace.frames.pop())
    page = render_html(trace)
    assert "<title>bytegraph trace: &lt;lambda&gt;</title>" in page
    trace.to_html(tmp_path / "page.html")
    assert (tmp_path / "page.html").read_text(encoding="utf-8") == page


def test_source_highlighting_uses_python_tokens():
    runs = highlight_python(["def f(x):  # note", "    return 'a' + 12"])
    assert ["kw", "def"] in runs[0] and ["com", "# note"] in runs[0]
    assert ["kw", "return"] in runs[1] and ["str", "'a'"] in runs[1] and ["lit", "12"] in runs[1]
    assert ["".join(text for _, text in line) for line in runs] == ["def f(x):  # note", "    return 'a' + 12"]


def test_source_highlighting_falls_back_to_plain_text():
    lines = ["    x = (1,", "  y"]
    runs = highlight_python(lines)
    assert ["".join(text for _, text in line) for line in runs] == lines


# ---- the command line --------------------------------------------------------------------

SCRIPT = """
import torch

SCALE = 3

def f(x, y):
    return x * SCALE + y

if __name__ == "__main__":
    raise SystemExit("the script's main block must not run")
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "model_script.py"
    path.write_text(SCRIPT)
    return path


@requires_sample_bytecode
def test_trace_command_calls_bytegraph_trace_and_writes_every_output(monkeypatch, script, tmp_path, capsys):
    torch = pytest.importorskip("torch")
    calls = []

    def fake_trace(fn, *args):
        calls.append((fn, args))
        return build_sample_trace()

    monkeypatch.setattr(bytegraph, "trace", fake_trace, raising=False)
    outputs = {kind: tmp_path / f"out.{kind}" for kind in ("html", "tex", "org")}
    argv = ["trace", f"{script}:f", "--args", "torch.ones(2), SCALE"]
    argv += ["--html", str(outputs["html"]), "--beamer", str(outputs["tex"]), "--org", str(outputs["org"])]
    assert bytegraph_main(argv) == 0
    (fn, args), = calls
    assert fn.__name__ == "f" and fn.__code__.co_filename == str(script)
    assert isinstance(args[0], torch.Tensor) and args[1] == 3
    assert torch.equal(fn(*args), torch.ones(2) * 3 + 3)
    assert embedded_data(outputs["html"].read_text())["title"] == "sample_fn"
    assert outputs["tex"].read_text().startswith(r"\documentclass")
    assert "#+BEGIN_SRC latex" in outputs["org"].read_text()
    assert capsys.readouterr().out.count("wrote ") == 3


@requires_sample_bytecode
def test_trace_command_spreads_only_tuples(monkeypatch, script, tmp_path):
    seen = []
    monkeypatch.setattr(bytegraph, "trace", lambda fn, *args: seen.append(args) or build_sample_trace(), raising=False)
    out = str(tmp_path / "o.org")
    assert bytegraph_main(["trace", f"{script}:f", "--args", "[1, 2]", "--org", out]) == 0
    assert bytegraph_main(["trace", f"{script}:f", "--args", "((1, 2),)", "--org", out]) == 0
    assert seen == [([1, 2],), ((1, 2),)]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["{script}:f"], "give at least one of --html"),
        (["{script}", "--html", "o.html"], "expected path/to/script.py:function"),
        (["missing.py:f", "--html", "o.html"], "no such script"),
        (["{script}:g", "--html", "o.html"], "has no 'g'"),
        (["{script}:SCALE", "--html", "o.html"], "is not callable"),
        (["{script}:f", "--args", "undefined_name", "--html", "o.html"], "NameError"),
    ],
)
def test_trace_command_reports_bad_input_in_one_line(monkeypatch, script, capsys, argv, message):
    monkeypatch.setattr(bytegraph, "trace", lambda fn, *args: build_sample_trace(), raising=False)
    assert bytegraph_main(["trace"] + [part.format(script=script) for part in argv]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1


def test_trace_command_says_when_bytegraph_trace_is_missing(monkeypatch, script, tmp_path, capsys):
    monkeypatch.delattr(bytegraph, "trace", raising=False)
    assert bytegraph_main(["trace", f"{script}:f", "--html", str(tmp_path / "o.html")]) == 2
    assert "bytegraph.trace is not available" in capsys.readouterr().err
    assert not (tmp_path / "o.html").exists()


def test_trace_command_is_reachable_as_a_module():
    result = subprocess.run([sys.executable, "-m", "bytegraph", "trace", "--help"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "--html" in result.stdout and "--beamer" in result.stdout and "--org" in result.stdout
