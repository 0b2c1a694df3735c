"""The compile trace (BYTEGRAPH_TRACE / bytegraph.set_trace_dir) read by tlparse from PyPI:
its report names the seeds' frames, their graphs, guards, breaks and generated code, with
compile-time spans and a link from each frame to its step-by-step viewer page."""

import glob
import html
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import torch

import bytegraph
from bytegraph import _readable_code, _structured_trace

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SEEDS = textwrap.dedent("""
    import torch, bytegraph
    from bytegraph import examples

    torch.manual_seed(0)
    net = bytegraph.compile(examples.Net(), backend="eager")
    net(torch.randn(2, 128))
    net(torch.randn(5, 128))  # a recompile of Net.forward
    foo2 = bytegraph.compile(examples.foo2, backend="eager")
    for sa, sb in ((1, 1), (-1, 1), (1, -1), (-1, -1)):
        foo2(sa * torch.ones(3), sb * torch.ones(3))
    bytegraph.compile(examples.slides_example, backend="eager")(torch.ones(2, 3), torch.ones(2, 3))
""")


def _tlparse():
    """The tlparse tool, installed from PyPI (pinned in constraints.txt) when missing."""
    found = shutil.which("tlparse") or shutil.which("tlparse", path=os.path.dirname(sys.executable))
    if found:
        return found
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-c", os.path.join(REPO, "constraints.txt"),
                           "tlparse"], capture_output=True, text=True, timeout=600)
    found = shutil.which("tlparse") or shutil.which("tlparse", path=os.path.dirname(sys.executable))
    if not found:
        pytest.skip(f"tlparse could not be installed from PyPI: {done.stderr.strip()[-500:]}")
    return found


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The seeds' examples compiled with BYTEGRAPH_TRACE set, then tlparse's report of the trace."""
    tlparse = _tlparse()
    root = tmp_path_factory.mktemp("structured_trace")
    trace_dir = root / "trace"
    env = dict(os.environ, PYTHONPATH=REPO, BYTEGRAPH_TRACE=str(trace_dir))
    env.pop("BYTEGRAPH_LOGS", None)
    done = subprocess.run([sys.executable, "-c", _SEEDS], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    [log] = glob.glob(str(trace_dir / "bytegraph_trace_*.log"))
    out = root / "report"
    # --strict: every line is understood; --strict-compile-id: every event names its compile.
    parsed = subprocess.run([tlparse, log, "-o", str(out), "--no-browser", "--strict", "--strict-compile-id"],
                            capture_output=True, text=True, timeout=300)
    assert parsed.returncode == 0, parsed.stderr
    return trace_dir, out


def _compile_dir(out, frame, compile_id):
    return out / f"-_{frame}_{compile_id}_0"


def _read(out, compile_dir, prefix):
    [path] = [p for p in compile_dir.iterdir() if p.name.startswith(prefix)]
    return path.read_text()


def _index(out):
    return html.unescape((out / "index.html").read_text())


def test_the_report_has_one_entry_per_frame_and_recompile(report):
    _, out = report
    index = _index(out)
    examples = os.path.join(REPO, "bytegraph", "examples.py")
    # The tree of frames: the user's function names (resume functions named after foo2's lines).
    assert f"{examples}:31 in Net.forward" in index
    assert f"{examples}:44 in foo2" in index
    resumed = sorted(set(re.findall(r"in (foo2 \(resumed at line \d+\))", index)))
    assert resumed == [f"foo2 (resumed at line {line})" for line in (47, 48, 49, 50)]
    assert "in slides_example" in index
    assert "__resume_at_" not in index
    # Net.forward was compiled twice: [0/0] and the recompile [0/1].
    assert "<a id=\"[0/0]\">[0/0]</a>" in index and "<a id=\"[0/1]\">[0/1]</a>" in index
    # Frames that broke are marked as such in the tree (tlparse's "restart" colour).
    assert len(re.findall(r"class='status-break'", index)) == 4  # foo2, two of its resume functions, slides
    assert len(re.findall(r"class='status-ok'", index)) >= 5


def test_graphs_guards_and_generated_code_are_in_each_frame(report):
    _, out = report
    net = _compile_dir(out, 0, 0)
    graph = _read(out, net, "dynamo_output_graph")
    assert "class GraphModule(torch.nn.Module)" in graph and "= self.self_fc(l_x_)" in graph
    assert "torch.nn.functional.relu(x)" in graph and 'L_x_: "f32[2, 128]"' in graph
    # The second size made the batch dimension dynamic (automatic dynamic shapes).
    assert 'L_x_: "f32[s0, 128]"' in _read(out, _compile_dir(out, 0, 1), "dynamo_output_graph")
    guards = _read(out, net, "dynamo_cpp_guards_str")
    assert "L['x']: TENSOR_MATCH" in guards and "size=[2, 128]" in guards
    assert "L[&#39;x&#39;]: TENSOR_MATCH" in _read(out, net, "dynamo_guards") or "TENSOR_MATCH" in _read(
        out, net, "dynamo_guards")
    foo2 = _compile_dir(out, 1, 0)
    generated = _read(out, foo2, "generated_code")
    assert "original: foo2" in generated and "generated: foo2" in generated
    # As source where depyf reads this interpreter's bytecode; as the disassembly, said so, elsewhere.
    as_source = _readable_code.decompiler_reads_this_interpreter()
    if as_source:
        assert "___graph_out = __compiled_fn_" in generated and "return foo2_resumed_at_line_47(a, x)" in generated
    else:
        assert "# (disassembly: this code could not be decompiled here)" in generated
    assert "if b.sum() < 0:" in generated  # the original, next to it
    assert "BINARY_OP" in _read(out, foo2, "original_bytecode")
    resume = _read(out, foo2, "resume_function_foo2_resumed_at_line_47")
    if as_source:
        assert "def foo2_resumed_at_line_47(a, x):" in resume and "x = x * -1" in resume
    else:
        assert "# (disassembly: this code could not be decompiled here)" in resume


def test_graph_breaks_with_user_stacks(report):
    _, out = report
    reason = _read(out, _compile_dir(out, 1, 0), "dynamo_graph_break_reason")
    assert reason.startswith("Graph break in foo2 (data_dependent_branch): branching on the value of")
    assert "examples.py:46 in foo2\n    if b.sum() < 0:" in reason
    failures = html.unescape((out / "failures_and_restarts.html").read_text())
    assert "Graph break in foo2 (data_dependent_branch)" in failures
    assert re.search(r"Graph break in foo2 \(resumed at line 4[78]\) \(data_dependent_branch\)", failures)
    assert "Graph break in slides_example (data_dependent_branch)" in failures


def test_compile_metrics_and_time_spans(report):
    _, out = report
    metrics = html.unescape(_read(out, _compile_dir(out, 0, 1), "compilation_metrics"))
    assert "Compilation Info for [0/1]" in metrics
    assert re.search(r"Entire Frame .*?: (\d+\.\d+)", metrics)
    assert "Graph Ops: 2" in metrics and re.search(r"Guard Count: [1-9]", metrics)
    events = json.loads((out / "chromium_events.json").read_text())
    spans = {(e["args"]["compile_id"], e["name"], e["ph"]) for e in events}
    for phase in ("tracing", "backend", "guards", "codegen"):
        assert ("[0/0]", f"bytegraph {phase}", "B") in spans and ("[0/0]", f"bytegraph {phase}", "E") in spans
    begins = [e for e in events if e["ph"] == "B"]
    ends = [e for e in events if e["ph"] == "E"]
    assert len(begins) == len(ends) and all(e["ts"] <= f["ts"] for e, f in zip(begins, ends))


def test_each_frame_links_to_its_step_by_step_viewer_page(report):
    trace_dir, out = report
    index = _index(out)
    links = re.findall(r'<a href="(file://[^"]+)">step-by-step trace \(bytegraph viewer\)</a>', index)
    compile_dirs = [p for p in out.iterdir() if p.is_dir() and p.name.startswith("-_")]
    assert len(links) == len(compile_dirs) == 9
    titles = []
    for link in links:
        page = Path(unquote(urlparse(link).path))
        assert page.parent == trace_dir.resolve() / "viewer"
        titles.append(re.search(r"<title>bytegraph trace: ([^<]+)</title>", page.read_text()).group(1))
    assert titles.count("forward") == 2  # Net.forward and its recompile
    assert "foo2" in titles and "foo2 (resumed at line 47)" in titles and "slides_example" in titles


def test_report_command_runs_tlparse_on_the_newest_trace(report, tmp_path):
    trace_dir, _ = report
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "bytegraph", "report", str(trace_dir), "-o", str(out)],
                          env=dict(os.environ, PYTHONPATH=REPO), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out / "index.html")
    assert "in foo2 (resumed at line 47)" in _index(out)
    missing = subprocess.run([sys.executable, "-m", "bytegraph", "report", str(tmp_path / "none")],
                             env=dict(os.environ, PYTHONPATH=REPO), capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and "no bytegraph_trace_*.log" in missing.stderr


def test_set_trace_dir_from_code(tmp_path):
    bytegraph.reset()
    previous = bytegraph.set_trace_dir(tmp_path / "here")
    try:
        assert _structured_trace.trace_file() is None  # opened on the first compile only

        def scaled(x):
            return x * 3

        bytegraph.compile(scaled, backend="eager")(torch.ones(2))
        path = _structured_trace.trace_file()
        assert path.parent == tmp_path / "here" and path.name.startswith("bytegraph_trace_")
        text = path.read_text()
        assert '"dynamo_start"' in text and "scaled" in text and '"compilation_metrics"' in text
    finally:
        bytegraph.set_trace_dir(previous)
        bytegraph.reset()
    size = path.stat().st_size
    bytegraph.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
    assert path.stat().st_size == size  # off again: nothing more written
