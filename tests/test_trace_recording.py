"""The interpreter's event stream (csrc/record) and bytegraph.trace feeding the trace viewer.

The seed (seeds/000) drew the interpreter's steps over slides_example by hand, on 3.8
bytecode; here the same records come from the tracer itself, on 3.11 bytecode: the
constants pushed and stored, a0 + a1 + a2 folded to 3, `sum` and `gt` added to the graph,
and the graph break at the branch on a tensor.
"""

import dis
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import bytegraph
from bytegraph._extension import _C
from bytegraph.examples import slides_example
from bytegraph.viewer.beamer import render_beamer
from bytegraph.viewer.html import render_html
from bytegraph.viewer.recorder import fx_node_row
from test_viewer_render import _pdflatex, embedded_data, steps_of

A = torch.arange(6.0).reshape(2, 3)  # sum 15 > 3: the first branch
B = torch.ones(2, 3)


@pytest.fixture(scope="module")
def seed_trace():
    return bytegraph.trace(slides_example, A, B)


def instructions_before_the_branch(code):
    """(opname, argrepr) of the real instructions up to the first conditional jump, as dis gives them."""
    rows = []
    for inst in dis.get_instructions(code):
        rows.append((inst.opname, inst.argrepr))
        if inst.opname.startswith("POP_JUMP"):
            return rows
    raise AssertionError("no conditional jump")


def step_at(frame, opname, argrepr=None):
    return next(s for s in frame.steps if s.opname == opname and (argrepr is None or s.argrepr == argrepr))


# ---- the seed's function -----------------------------------------------------------------


def test_seed_function_frames_are_the_original_then_its_resume_function(seed_trace):
    kinds = [(frame.kind, frame.parent) for frame in seed_trace.frames]
    assert kinds == [("original", None), ("resume", None)]
    assert seed_trace.frames[0].name == "slides_example"
    assert seed_trace.frames[0].code.co_code == slides_example.__code__.co_code
    assert torch.equal(seed_trace.result, slides_example(A, B))
    assert len(seed_trace.graphs) == 2 and all(hasattr(gm, "graph") for gm in seed_trace.graphs)
    assert any("L['a']" in guard and "TENSOR_MATCH" in guard for guard in seed_trace.guards)


def test_seed_function_steps_follow_the_bytecode_to_the_break(seed_trace):
    frame = seed_trace.frames[0]
    expected = instructions_before_the_branch(slides_example.__code__)
    assert [(s.opname, s.argrepr) for s in frame.steps] == expected
    real_offsets = [inst.offset for inst in dis.get_instructions(slides_example.__code__)]
    assert all(s.offset in real_offsets for s in frame.steps)
    source = [s.source for s in frame.steps]
    assert source[1:3] == ["a0 = 0", "a0 = 0"] and source[-1] == "if a.sum() > a3:"


def _told_with_this_interpreters_instructions(records):
    """The records follow 3.11's instructions. Later interpreters tell the same story with
    their own: no PRECALL, the method lookup is LOAD_ATTR's method form, the branch has no
    direction in its name; from 3.13 two loads of locals may be one instruction and the call
    protocol's NULL comes after the callable (dis shows "sum + NULL|self")."""
    opmap = {name: op for name, op in dis.opmap.items() if op < 256}
    instructions = list(dis.get_instructions(slides_example))
    branch = next(i.opname for i in instructions if i.opname.startswith("POP_JUMP"))
    paired = {i.argrepr for i in instructions if i.opname == "LOAD_FAST_LOAD_FAST"}
    null_after_callable = any(i.argrepr.endswith("+ NULL|self") for i in instructions)
    adapted = []
    for opname, stack, note in records:
        if opname not in opmap and opname == "PRECALL":
            continue
        if opname not in opmap and opname == "LOAD_METHOD":
            opname, note = "LOAD_ATTR", "look up attribute sum"
        if null_after_callable and stack[:1] == ["NullVariable"] and len(stack) == 2:
            stack = stack[::-1]
        if opname.startswith("POP_JUMP"):
            opname = branch
        if opname == "LOAD_FAST" and adapted and adapted[-1][0] == "LOAD_FAST":
            first, second = adapted[-1][2].removeprefix("push local "), note.removeprefix("push local ")
            if f"{first}, {second}" in paired:
                adapted[-1] = ("LOAD_FAST_LOAD_FAST", stack, f"push locals {first} and {second}")
                continue
        adapted.append((opname, stack, note))
    return adapted


def test_seed_records_adapted_to_3_11(seed_trace):
    """The hand-written records of the seed, one per instruction: stack after the step and note."""
    steps = seed_trace.frames[0].steps
    a = "TensorVariable(l_a_: f32[2, 3])"
    records = [
        ("RESUME", [], "start of the frame"),
        ("LOAD_CONST", ["ConstantVariable(0)"], "push constant 0"),
        ("STORE_FAST", [], "store to local a0"),
        ("LOAD_CONST", ["ConstantVariable(1)"], "push constant 1"),
        ("STORE_FAST", [], "store to local a1"),
        ("LOAD_CONST", ["ConstantVariable(2)"], "push constant 2"),
        ("STORE_FAST", [], "store to local a2"),
        ("LOAD_FAST", ["ConstantVariable(0)"], "push local a0"),
        ("LOAD_FAST", ["ConstantVariable(0)", "ConstantVariable(1)"], "push local a1"),
        ("BINARY_OP", ["ConstantVariable(1)"], "+ on constants, folded to ConstantVariable(1)"),
        ("LOAD_FAST", ["ConstantVariable(1)", "ConstantVariable(2)"], "push local a2"),
        ("BINARY_OP", ["ConstantVariable(3)"], "+ on constants, folded to ConstantVariable(3)"),
        ("STORE_FAST", [], "store to local a3"),
        ("LOAD_FAST", [a], "push local a"),
        ("LOAD_METHOD", ["NullVariable", f"GetAttrVariable({a}, sum)"], "look up method sum"),
        ("PRECALL", ["NullVariable", f"GetAttrVariable({a}, sum)"], "prepare the call"),
        ("CALL", ["TensorVariable(sum: f32[])"], "tensor method call: sum added to the graph"),
        ("LOAD_FAST", ["TensorVariable(sum: f32[])", "ConstantVariable(3)"], "push local a3"),
        ("COMPARE_OP", ["TensorVariable(gt: b8[])"], "function call: gt added to the graph"),
        # The break: the state is the one rolled back to, before the jump popped its condition.
        ("POP_JUMP_FORWARD_IF_FALSE", ["TensorVariable(gt: b8[])"], "branch on a tensor: graph break, compile the subgraph"),
    ]
    records = _told_with_this_interpreters_instructions(records)
    assert len(steps) == len(records)
    for step, (opname, stack, note) in zip(steps, records):
        assert (step.opname, step.stack) == (opname, stack)
        assert step.note == note or step.note.startswith(note + "; "), (step.opname, step.note)
    assert "guard installed" in steps[0].note or "guards installed" in steps[0].note


def test_seed_graph_grows_by_sum_then_gt(seed_trace):
    steps = seed_trace.frames[0].steps
    placeholders = ["placeholder  l_a_  L_a_  ()  {}", "placeholder  l_b_  L_b_  ()  {}"]
    call = step_at(seed_trace.frames[0], "CALL")
    compare = step_at(seed_trace.frames[0], "COMPARE_OP")
    assert steps[0].graph == placeholders
    assert all(step.graph == placeholders for step in steps[: steps.index(call)])
    assert call.graph == placeholders + ["call_method  sum_1  sum  (l_a_,)  {}"]
    assert compare.graph == call.graph + ["call_function  gt  gt  (sum_1, 3)  {}"]
    assert steps[-1].graph == compare.graph


def test_recorded_rows_name_nodes_as_the_fx_graph_does(seed_trace):
    """The rows are rendered while tracing, before FX exists; FX's own names must agree."""
    assert len(seed_trace.graphs) >= 1
    for frame, gm in zip(seed_trace.frames, seed_trace.graphs):
        real = [fx_node_row(node) for node in gm.graph.nodes if node.op.startswith("call_")]
        recorded = [row for row in frame.steps[-1].graph if row.startswith("call_")]
        assert recorded == real


def test_snapshots_of_locals_at_chosen_steps(seed_trace):
    frame = seed_trace.frames[0]
    a, b = "TensorVariable(l_a_: f32[2, 3])", "TensorVariable(l_b_: f32[2, 3])"
    assert frame.steps[0].locals == {"a": a, "b": b}
    assert step_at(frame, "STORE_FAST", "a0").locals == {"a": a, "b": b, "a0": "ConstantVariable(0)"}
    folded = step_at(frame, "STORE_FAST", "a3").locals
    assert folded == {"a": a, "b": b, **{f"a{i}": f"ConstantVariable({v})" for i, v in enumerate((0, 1, 2, 3))}}
    assert frame.steps[-1].locals == folded


def test_resume_function_finishes_the_first_branch(seed_trace):
    resume = seed_trace.frames[1]
    assert resume.name.startswith("slides_example (resumed at line ")
    assert resume.steps[0].locals["a3"] == "ConstantVariable(3)"
    assert [s.opname for s in resume.steps][-1] == "RETURN_VALUE"
    adds = [row for row in resume.steps[-1].graph if row.startswith("call_")]
    assert adds == ["call_function  add  add  (l_a_, l_b_)  {}", "call_function  add_1  add  (add, 3)  {}"]
    assert resume.steps[-1].note == "return TensorVariable(add_1: f32[2, 3])" or resume.steps[-1].note.startswith("return ")


def test_other_branch_subtracts():
    trace = bytegraph.trace(slides_example, -A, B)
    assert torch.equal(trace.result, slides_example(-A, B))
    resume = trace.frames[-1]
    assert [row for row in resume.steps[-1].graph if row.startswith("call_")] == ["call_function  sub  sub  (l_a_, l_b_)  {}"]


def test_timeline_covers_every_step_once_in_order(seed_trace):
    assert len(seed_trace.timeline) > 10
    assert sorted(seed_trace.timeline) == [(f, s) for f, frame in enumerate(seed_trace.frames) for s in range(len(frame.steps))]


# ---- inlined calls -----------------------------------------------------------------------


def inner(y):
    return y * 2


def helper(x):
    return inner(x) + 1


def outer(a):
    b = a.cos()
    c = helper(b)
    return c.sum()


def test_inlined_calls_are_nested_frames_with_their_parents():
    x = torch.linspace(-1, 1, 5)
    trace = bytegraph.trace(outer, x)
    assert torch.allclose(trace.result, outer(x))
    names = [(f.name, f.kind, f.parent) for f in trace.frames]
    assert names == [("outer", "original", None), ("helper", "inlined", 0), ("inner", "inlined", 1)]
    for child in trace.frames[1:]:
        parent = trace.frames[child.parent]
        call = parent.steps[child.parent_step]
        assert call.opname == "CALL" and call.note == f"inline call to {child.name}"
    # The helper's steps run between its caller's PRECALL and CALL steps.
    order = trace.timeline
    call_of_helper = order.index((0, trace.frames[1].parent_step))
    nested = order[order.index((0, trace.frames[1].parent_step - 1)) + 1 : call_of_helper]
    assert nested[0] == (1, 0) and nested[-1] == (1, len(trace.frames[1].steps) - 1)
    assert sorted(nested) == [(f, s) for f in (1, 2) for s in range(len(trace.frames[f].steps))]
    inner_frame = trace.frames[2]
    assert [s.opname for s in inner_frame.steps] == [i.opname for i in dis.get_instructions(inner) if i.opname != "CACHE"]
    assert step_at(inner_frame, "LOAD_FAST").stack == ["TensorVariable(cos: f32[5])"]
    assert step_at(inner_frame, "BINARY_OP").graph[-2:] == [
        "call_method  b  cos  (l_a_,)  {}",  # named after the local it was stored into
        "call_function  mul  mul  (b, 2)  {}",
    ]
    assert step_at(inner_frame, "BINARY_OP").note == "function call: mul added to the graph"
    assert trace.frames[1].steps[0].locals == {"x": "TensorVariable(cos: f32[5])"}
    assert inner_frame.steps[0].source == "def inner(y):" or inner_frame.steps[-1].source == "return y * 2"


def branchy_helper(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


def calls_branchy(a):
    return branchy_helper(a * 2)


def test_a_break_inside_an_inlined_call_is_recorded_in_both_frames():
    trace = bytegraph.trace(calls_branchy, torch.ones(3))
    assert torch.equal(trace.result, calls_branchy(torch.ones(3)))
    first, helper_frame = trace.frames[0], trace.frames[1]
    assert (helper_frame.name, helper_frame.kind, helper_frame.parent) == ("branchy_helper", "inlined", 0)
    assert helper_frame.steps[-1].note == "branch on a tensor: graph break, compile the subgraph"
    assert first.steps[-1].opname == "CALL" and first.steps[-1].note.startswith("branch on a tensor")
    # The outer frame was rolled back to before the call: its graph holds only the mul.
    assert [row for row in first.steps[-1].graph if row.startswith("call_")] == ["call_function  mul  mul  (l_a_, 2)  {}"]


# ---- the stream itself -------------------------------------------------------------------


class Listener:
    """Collects the raw events of bytegraph._C.record."""

    def __init__(self):
        self.events = []

    def begin_frame(self, name, code, parent):
        self.events.append(("begin", name, parent))
        return sum(1 for event in self.events if event[0] == "begin") - 1

    def step(self, frame, offset, opname, argrepr, line, stack, locals, graph_kept, graph_added, note):
        self.events.append(("step", frame, opname, graph_kept, list(graph_added)))

    def end_frame(self, frame):
        self.events.append(("end", frame))

    def end_trace(self, graph_module, guards):
        self.events.append(("trace", graph_module, list(guards)))


def sizes(x):
    n = x.size(0)  # folded: its node is dropped again
    return x.relu() * n


def test_raw_events_deltas_rebuild_the_graph():
    listener = Listener()
    _C.record.attach(listener)
    try:
        assert _C.record.attached() is listener
        result = _C.trace.trace(sizes, (torch.ones(4),), {})
    finally:
        _C.record.detach()
    assert _C.record.attached() is None
    kinds = [event[0] for event in listener.events]
    assert kinds[0] == "begin" and kinds[-2:] == ["end", "trace"]
    rows = []
    for event in listener.events:
        if event[0] == "step":
            _, _, opname, kept, added = event
            assert kept <= len(rows)
            rows = rows[:kept] + added
    gm = listener.events[-1][1]
    assert gm is result.graph_module
    assert rows == [fx_node_row(node) for node in gm.graph.nodes if node.op != "output"]
    assert listener.events[-1][2] == list(result.guards)


def test_attaching_twice_is_an_error_and_nothing_is_recorded_when_detached():
    listener = Listener()
    _C.record.attach(listener)
    try:
        with pytest.raises(ValueError, match="already attached"):
            _C.record.attach(Listener())
    finally:
        _C.record.detach()
    _C.record.detach()  # harmless when none is attached
    _C.trace.trace(sizes, (torch.ones(4),), {})
    assert listener.events == []


def test_a_listener_hears_only_its_own_thread():
    import threading

    listener = Listener()
    _C.record.attach(listener)
    try:
        worker = threading.Thread(target=lambda: _C.trace.trace(sizes, (torch.ones(4),), {}))
        worker.start()
        worker.join()
        assert listener.events == []
        _C.trace.trace(sizes, (torch.ones(4),), {})
        assert listener.events[0] == ("begin", "sizes", None)
    finally:
        _C.record.detach()


def test_a_failing_listener_raises_a_python_error_not_a_crash():
    class Broken(Listener):
        def step(self, *args):
            raise RuntimeError("listener broke")

    _C.record.attach(Broken())
    try:
        with pytest.raises(RuntimeError, match="listener broke"):
            _C.trace.trace(sizes, (torch.ones(4),), {})
    finally:
        _C.record.detach()


def test_trace_detaches_even_when_the_function_raises():
    def fails(x):
        return x + torch.ones(5)  # shapes do not broadcast

    with pytest.raises(Exception):
        bytegraph.trace(fails, torch.ones(3))
    assert _C.record.attached() is None


def test_trace_really_traces_a_function_already_compiled():
    compiled = bytegraph.compile(outer, backend="eager")
    compiled(torch.ones(3))
    compiled(torch.ones(3))  # cached now
    trace = bytegraph.trace(outer, torch.ones(3))
    assert [f.name for f in trace.frames] == ["outer", "helper", "inner"]
    again = bytegraph.trace(outer, torch.ones(3))
    assert len(again.frames) == 3 and len(again.graphs) == 1


def test_trace_of_a_module_and_a_bound_method():
    net = torch.nn.Sequential(torch.nn.Linear(4, 2))
    x = torch.ones(1, 4)
    trace = bytegraph.trace(net, x)
    assert trace.frames[0].name == "forward" and torch.allclose(trace.result, net(x))
    assert any("call_module" in row for row in trace.frames[0].steps[-1].graph) or len(trace.frames) > 1
    with pytest.raises(TypeError, match="Python function"):
        bytegraph.trace(len, [1])


# ---- renderers on real traces ------------------------------------------------------------


def test_html_of_a_real_trace_embeds_every_step(seed_trace):
    data = embedded_data(render_html(seed_trace))
    assert [len(frame["steps"]) for frame in data["frames"]] == [len(frame.steps) for frame in seed_trace.frames]
    assert data["frames"][0]["steps"][-1]["note"] == "branch on a tensor: graph break, compile the subgraph"


def test_beamer_of_a_real_trace_compiles(tmp_path, seed_trace):
    _pdflatex()
    (tmp_path / "slides.tex").write_text(render_beamer(seed_trace))
    result = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "slides.tex"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    log = (tmp_path / "slides.log").read_text(errors="replace")
    assert result.returncode == 0, log[-3000:]
    pages = int(re.search(r"Output written on slides\.pdf \((\d+) pages?", log).group(1))
    assert pages == len(steps_of(seed_trace))


def _env_with_bytegraph():
    """This checkout's bytegraph importable from any working directory."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(bytegraph.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH", "")]))
    return env


def test_cli_end_to_end(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(textwrap.dedent('''
        import torch

        def scale(t):
            return t * 3

        def fn(x, y):
            z = scale(x) + y
            return z.relu()
    '''))
    out = tmp_path / "out.html"
    org = tmp_path / "out.org"
    result = subprocess.run(
        [sys.executable, "-m", "bytegraph", "trace", f"{script}:fn", "--args", "(torch.ones(2), torch.zeros(2))",
         "--html", str(out), "--org", str(org)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=_env_with_bytegraph(),
    )
    assert result.returncode == 0, result.stderr
    assert f"wrote {out} (2 frames," in result.stdout
    data = embedded_data(out.read_text())
    assert [frame["name"] for frame in data["frames"]] == ["fn", "scale"]
    assert data["frames"][1]["kind"] == "inlined" and data["frames"][1]["parent"] == 0
    assert any("relu" in node for node in data["nodes"])
    assert "Tracing fn" in org.read_text() or "fn" in org.read_text()


# ---- the page in a real browser ----------------------------------------------------------

try:
    from test_viewer_browser import browser, console_errors, current_offset, open_page, stack_values  # noqa: F401
except pytest.skip.Exception as skipped:
    _browser_skip = str(skipped)

    @pytest.fixture(scope="module")
    def browser():
        pytest.skip(_browser_skip)


def test_real_trace_page_loads_and_steps_in_chromium(browser, tmp_path, seed_trace):
    path = tmp_path / "real.html"
    seed_trace.to_html(path)
    open_page(browser, path.as_uri())
    assert console_errors(browser) == []
    steps = seed_trace.frames[0].steps
    assert current_offset(browser) == steps[0].offset
    browser.find_element("id", "next").click()
    assert current_offset(browser) == steps[1].offset
    assert stack_values(browser) == steps[1].stack == ["ConstantVariable(0)"]
    last = len(steps) - 1
    open_page(browser, path.as_uri() + f"#frame=0&step={last}")
    assert browser.find_element("id", "note").text == steps[last].note
    assert stack_values(browser) == steps[last].stack
    assert len(browser.find_elements("css selector", "#graph tr")) == len(steps[last].graph)
    open_page(browser, path.as_uri() + "#frame=1&step=0")
    assert current_offset(browser) == seed_trace.frames[1].steps[0].offset
    assert console_errors(browser) == []


# ---- several breaks ----------------------------------------------------------------------


def test_each_resume_function_is_a_frame_of_its_own():
    from bytegraph.examples import foo2

    a, b = torch.tensor([-1.0, -2.0]), torch.tensor([-3.0, 1.0])  # both branches taken
    trace = bytegraph.trace(foo2, a, b)
    assert torch.equal(trace.result, foo2(a, b))
    assert [f.kind for f in trace.frames] == ["original", "resume", "resume"]
    assert len(trace.graphs) == 3
    for frame in trace.frames[:2]:
        assert frame.steps[-1].note == "branch on a tensor: graph break, compile the subgraph"
    assert trace.frames[-1].steps[-1].opname == "RETURN_VALUE"
    # Each frame's graph is its own trace's: the resume functions start from their inputs.
    for frame, gm in zip(trace.frames, trace.graphs):
        assert [r for r in frame.steps[-1].graph if r.startswith("call_")] == [
            fx_node_row(node) for node in gm.graph.nodes if node.op.startswith("call_")
        ]
    muls = [r for r in trace.frames[1].steps[-1].graph if r.startswith("call_function") and "  mul  " in r]
    assert muls, "the first resume function multiplies x by -1"
