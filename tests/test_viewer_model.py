"""The trace viewer's data model and recorder, on a trace of the slides' example made by hand.

`build_sample_trace()` (also used by the renderer and browser tests) feeds a TraceRecorder
what the symbolic interpreter would report for `sample_fn(a, b)` with a positive `a.sum()`:
the original frame, an inlined call to `helper`, a graph break on the tensor-valued branch
and the resume function that runs the taken branch. Offsets, opnames and argreprs come from
the real bytecode; the stacks, locals and graph rows are written out by hand, as the slides
were.
"""

import dis
import json
import linecache

import pytest

from bytegraph.viewer import FrameTrace, Step, Trace, TraceRecorder, fx_graph_rows, fx_node_row
from bytegraph.viewer.listing import bytecode_listing, split_node_row
from bytegraph.viewer.model import bytecode_rows, graph_text


def helper(x):
    return x * 2


def sample_fn(a, b):
    a0 = 0
    a1 = 1
    a2 = 2
    a3 = a0 + a1 + a2
    c = helper(a)
    if c.sum() > 0:
        return a + b + a3
    return a - b


A = "TensorVariable(a: f32[2, 3])"
B = "TensorVariable(b: f32[2, 3])"
MUL = "TensorVariable(mul: f32[2, 3])"
PLACEHOLDERS = ["placeholder  a  a  ()  {}", "placeholder  b  b  ()  {}"]
MUL_NODE = "call_function  mul  <built-in function mul>  (a, 2)  {}"
SUM_NODE = "call_method  sum_1  sum  (mul,)  {}"
GT_NODE = "call_function  gt  <built-in function gt>  (sum_1, 0)  {}"

# (opname, stack after the instruction, locals assigned, graph nodes added, note)
SAMPLE_STEPS = [
    ("RESUME", [], {}, [], "start of the frame"),
    ("LOAD_CONST", ["ConstantVariable(0)"], {}, [], "push constant 0"),
    ("STORE_FAST", [], {"a0": "ConstantVariable(0)"}, [], "store to local a0"),
    ("LOAD_CONST", ["ConstantVariable(1)"], {}, [], "push constant 1"),
    ("STORE_FAST", [], {"a1": "ConstantVariable(1)"}, [], "store to local a1"),
    ("LOAD_CONST", ["ConstantVariable(2)"], {}, [], "push constant 2"),
    ("STORE_FAST", [], {"a2": "ConstantVariable(2)"}, [], "store to local a2"),
    ("LOAD_FAST", ["ConstantVariable(0)"], {}, [], "push local a0"),
    ("LOAD_FAST", ["ConstantVariable(0)", "ConstantVariable(1)"], {}, [], "push local a1"),
    ("BINARY_OP", ["ConstantVariable(1)"], {}, [], "constant folding: 0 + 1 = 1"),
    ("LOAD_FAST", ["ConstantVariable(1)", "ConstantVariable(2)"], {}, [], "push local a2"),
    ("BINARY_OP", ["ConstantVariable(3)"], {}, [], "constant folding: 1 + 2 = 3"),
    ("STORE_FAST", [], {"a3": "ConstantVariable(3)"}, [], "store to local a3"),
    ("LOAD_GLOBAL", ["NULL", "UserFunctionVariable(<function helper>)"], {}, [], "push global helper"),
    ("LOAD_FAST", ["NULL", "UserFunctionVariable(<function helper>)", A], {}, [], "push local a"),
    ("PRECALL", ["NULL", "UserFunctionVariable(<function helper>)", A], {}, [], ""),
    ("CALL", [MUL], {}, [], "inline call to helper"),  # the callee added the mul node
    ("STORE_FAST", [], {"c": MUL}, [], "store to local c"),
    ("LOAD_FAST", [MUL], {}, [], "push local c"),
    ("LOAD_METHOD", ["GetAttrVariable(mul, sum)", MUL], {}, [], "method lookup: sum on a tensor"),
    ("PRECALL", ["GetAttrVariable(mul, sum)", MUL], {}, [], ""),
    ("CALL", ["TensorVariable(sum_1: f32[])"], {}, [SUM_NODE], "tensor method call: sum added to the graph"),
    ("LOAD_CONST", ["TensorVariable(sum_1: f32[])", "ConstantVariable(0)"], {}, [], "push constant 0"),
    ("COMPARE_OP", ["TensorVariable(gt: b8[])"], {}, [GT_NODE], "tensor comparison: gt added to the graph"),
    ("POP_JUMP_FORWARD_IF_FALSE", [], {}, [], "branch on a tensor: graph break, compile the subgraph"),
]
HELPER_STEPS = [
    ("RESUME", [], {}, [], "start of the inlined frame"),
    ("LOAD_FAST", [A], {}, [], "push local x"),
    ("LOAD_CONST", [A, "ConstantVariable(2)"], {}, [], "push constant 2"),
    ("BINARY_OP", [MUL], {}, [MUL_NODE], "tensor arithmetic: mul added to the graph"),
    ("RETURN_VALUE", [], {}, [], "return from the inlined call"),
]
RESUME_STEPS = [
    ("LOAD_FAST", [A], {}, [], "push local a"),
    ("LOAD_FAST", [A, B], {}, [], "push local b"),
    ("BINARY_OP", ["TensorVariable(add: f32[2, 3])"], {}, ["call_function  add  <built-in function add>  (a, b)  {}"], "tensor arithmetic: add added to the graph"),
    ("LOAD_FAST", ["TensorVariable(add: f32[2, 3])", "ConstantVariable(3)"], {}, [], "push local a3"),
    ("BINARY_OP", ["TensorVariable(add_1: f32[2, 3])"], {}, ["call_function  add_1  <built-in function add>  (add, 3)  {}"], "tensor arithmetic: add_1 added to the graph"),
    ("RETURN_VALUE", [], {}, ["output  output  output  ((add_1,),)  {}"], "return: compile the graph"),
]
RESUME_OFFSET = 108  # the instruction after the branch: the resume function runs the taken branch

# The script above is the slides' story told with CPython 3.11's instructions for sample_fn;
# later versions compile sample_fn differently (no PRECALL, LOAD_ATTR's method form, ...).
# The viewer is version-neutral: real traces of every version are rendered in
# test_trace_recording.py.
SAMPLE_FOLLOWS_THIS_BYTECODE = [i.opname for i in dis.get_instructions(sample_fn)][:len(SAMPLE_STEPS)] == \
    [step[0] for step in SAMPLE_STEPS]
requires_sample_bytecode = pytest.mark.skipif(
    not SAMPLE_FOLLOWS_THIS_BYTECODE,
    reason="the hand-written sample trace follows CPython 3.11's bytecode of sample_fn")


def instructions(code, start=0):
    return [instruction for instruction in dis.get_instructions(code) if instruction.offset >= start]


def _play(recorder, frame_id, code, script, start=0, locals_=None, graph=None, before_step=None):
    """Record `script` against the real instructions of `code`, in order from `start`."""
    locals_ = dict(locals_ or {})
    graph = list(graph or [])
    line = None
    for index, (instruction, (opname, stack, assigned, added, note)) in enumerate(zip(instructions(code, start), script)):
        assert instruction.opname == opname, f"sample script is out of step with the bytecode at {instruction.offset}"
        if before_step is not None:
            graph = before_step(index, graph)
        line = instruction.starts_line or line
        locals_.update(assigned)
        graph.extend(added)
        recorder.step(frame_id, instruction.offset, opname, instruction.argrepr, line, stack, dict(locals_), list(graph), note)
    return locals_, graph


def build_sample_trace() -> Trace:
    recorder = TraceRecorder()
    code = sample_fn.__code__
    arguments = {"a": A, "b": B}
    original = recorder.begin_frame("sample_fn", code, "original")

    def inline_helper(index, graph):
        # The helper is inlined while CALL (step 16) runs, before CALL's own step is recorded.
        if index != 16:
            return graph
        inlined = recorder.begin_frame("helper", helper.__code__, "inlined", parent=original)
        _, graph = _play(recorder, inlined, helper.__code__, HELPER_STEPS, locals_={"x": A}, graph=graph)
        recorder.end_frame(inlined)
        return graph

    locals_, graph = _play(recorder, original, code, SAMPLE_STEPS, locals_=arguments, graph=PLACEHOLDERS, before_step=inline_helper)
    recorder.end_frame(original)
    recorder.add_graph("\n".join(graph))
    recorder.add_guards(["TENSOR_MATCH: L['a'] f32[2, 3]", "TENSOR_MATCH: L['b'] f32[2, 3]"])

    resume = recorder.begin_frame(f"__resume_at_{RESUME_OFFSET}_1", None, "resume")
    # A trace may also carry its bytecode rows and source without a code object (as when
    # read back from JSON); here they are the taken branch of sample_fn.
    frame = recorder.trace().frames[resume]
    frame.bytecode = [row for row in bytecode_rows(code) if row[0] >= RESUME_OFFSET]
    frame.source_lines = FrameTrace("sample_fn", code).source_lines
    frame.filename = code.co_filename
    resume_locals = {"a": A, "b": B, "a3": "ConstantVariable(3)"}
    _play(recorder, resume, code, RESUME_STEPS, start=RESUME_OFFSET, locals_=resume_locals, graph=PLACEHOLDERS)
    recorder.end_frame(resume)
    recorder.add_graph("def forward(self, a, b):\n    add = a + b\n    add_1 = add + 3\n    return (add_1,)")
    recorder.set_result("tensor([[...]])")
    return recorder.trace()


# ---- the recorder ----------------------------------------------------------------------


@requires_sample_bytecode
def test_recorder_builds_frames_with_kinds_parents_and_steps():
    trace = build_sample_trace()
    assert [(frame.name, frame.kind, frame.parent) for frame in trace.frames] == [
        ("sample_fn", "original", None),
        ("helper", "inlined", 0),
        (f"__resume_at_{RESUME_OFFSET}_1", "resume", None),
    ]
    assert [len(frame.steps) for frame in trace.frames] == [len(SAMPLE_STEPS), len(HELPER_STEPS), len(RESUME_STEPS)]
    # The inlined call happened during the original frame's CALL at step 16.
    assert trace.frames[1].parent_step == 16
    assert trace.frames[0].steps[16].opname == "CALL"
    assert trace.frames[0].steps[16].note == "inline call to helper"
    assert len(trace.graphs) == 2 and len(trace.guards) == 2


@requires_sample_bytecode
def test_timeline_interleaves_the_inlined_frame_inside_the_call():
    trace = build_sample_trace()
    order = trace.timeline
    assert len(order) == sum(len(frame.steps) for frame in trace.frames)
    helper_positions = [position for position, (frame, _) in enumerate(order) if frame == 1]
    assert order[helper_positions[0] - 1] == (0, 15)  # PRECALL, just before the call
    assert order[helper_positions[-1] + 1] == (0, 16)  # CALL's own step, after the callee returned


@requires_sample_bytecode
def test_step_source_is_the_text_of_its_line():
    trace = build_sample_trace()
    filename = sample_fn.__code__.co_filename
    for frame in trace.frames:
        for step in frame.steps:
            assert step.line is not None
            assert step.source == linecache.getline(filename, step.line).strip()
    assert trace.frames[0].steps[1].source == "a0 = 0"
    assert trace.frames[1].steps[3].source == "return x * 2"


@requires_sample_bytecode
def test_bytecode_rows_cover_every_recorded_step():
    trace = build_sample_trace()
    for frame in trace.frames:
        rows = {row[0]: row for row in frame.bytecode}
        for step in frame.steps:
            assert rows[step.offset][1] == step.opname
            assert rows[step.offset][3] == step.line


def test_bytecode_rows_match_dis_and_mark_jump_targets():
    rows = bytecode_rows(sample_fn.__code__)
    real = list(dis.get_instructions(sample_fn.__code__))
    assert [(row[0], row[1], row[2]) for row in rows] == [(i.offset, i.opname, i.argrepr) for i in real]
    targets = [row[0] for row in rows if row[4]]
    assert targets == [i.offset for i in real if i.is_jump_target] and targets
    assert all(row[3] is not None for row in rows)


def test_source_lines_start_at_the_def_line():
    frame = FrameTrace("sample_fn", sample_fn.__code__)
    lines, first = frame.source_lines
    assert first == sample_fn.__code__.co_firstlineno
    assert lines[0] == "def sample_fn(a, b):"
    assert lines[-1].strip() == "return a - b"


def test_none_locals_and_graph_mean_unchanged():
    recorder = TraceRecorder()
    frame = recorder.begin_frame("f", None)
    recorder.step(frame, 0, "LOAD_FAST", "x", None, ["1"], {"x": "1"}, ["placeholder  x  x  ()  {}"], "")
    recorder.step(frame, 2, "POP_TOP", "", None, [], None, None, "")
    second = recorder.trace().frames[0].steps[1]
    assert second.locals == {"x": "1"}
    assert second.graph == ["placeholder  x  x  ()  {}"]


def test_values_become_text():
    recorder = TraceRecorder()
    frame = recorder.begin_frame("f", None)
    recorder.step(frame, 0, "LOAD_CONST", 7, 3, [1, None], {"n": 2}, [], "n")
    step = recorder.trace().frames[0].steps[0]
    assert step == Step(0, "LOAD_CONST", "7", 3, "", ["1", "None"], {"n": "2"}, [], "n")


def test_a_function_stands_for_its_code_and_a_negative_line_for_none():
    recorder = TraceRecorder()
    frame = recorder.begin_frame("helper", helper)
    recorder.step(frame, 0, "RESUME", "", -1, [], {}, [], "")
    recorded = recorder.trace().frames[0]
    assert recorded.code is helper.__code__
    assert recorded.steps[0].line is None and recorded.steps[0].source == ""


def test_recorder_rejects_bad_events():
    recorder = TraceRecorder()
    with pytest.raises(ValueError, match="kind"):
        recorder.begin_frame("f", None, "generator")
    with pytest.raises(ValueError, match="parent"):
        recorder.begin_frame("g", None, "inlined")
    frame = recorder.begin_frame("f", None)
    with pytest.raises(ValueError, match="no frame"):
        recorder.step(frame + 1, 0, "NOP")
    with pytest.raises(ValueError, match="no frame"):
        recorder.begin_frame("g", None, "inlined", parent=5)
    recorder.end_frame(frame)
    with pytest.raises(ValueError, match="ended"):
        recorder.step(frame, 0, "NOP")


def test_frame_trace_rejects_unknown_kind():
    with pytest.raises(ValueError):
        FrameTrace("f", None, "coroutine")


# ---- serialisation ---------------------------------------------------------------------


@requires_sample_bytecode
def test_json_round_trip_keeps_everything_the_renderers_read():
    trace = build_sample_trace()
    text = trace.to_json()
    again = Trace.from_json(text)
    assert again.to_dict() == json.loads(text)
    assert again.frames[0].steps == trace.frames[0].steps
    assert repr(again.result) == repr(trace.result)


@requires_sample_bytecode
def test_to_dict_is_plain_json_and_names_the_file():
    data = json.loads(build_sample_trace().to_json())
    assert data["title"] == "sample_fn"
    assert data["frames"][0]["filename"] == __file__
    assert data["frames"][0]["first_line"] == sample_fn.__code__.co_firstlineno
    assert data["frames"][2]["bytecode"][0][0] == RESUME_OFFSET
    assert data["result"] == repr("tensor([[...]])")


def test_result_with_a_failing_repr_still_serialises():
    class Broken:
        def __repr__(self):
            raise RuntimeError("no")

    assert "repr failed" in Trace(result=Broken()).to_dict()["result"]


# ---- torch.fx text ---------------------------------------------------------------------


def test_fx_rows_describe_a_real_graph():
    torch = pytest.importorskip("torch")
    fx = pytest.importorskip("torch.fx")

    def f(a):
        return a.sum() + 1

    gm = fx.symbolic_trace(f)
    rows = fx_graph_rows(gm)
    nodes = list(gm.graph.nodes)
    assert len(rows) == len(nodes)
    for row, node in zip(rows, nodes):
        columns = split_node_row(row)
        assert columns[:2] == [node.op, node.name]
        assert row == fx_node_row(node)
    assert split_node_row(rows[1]) == ["call_method", nodes[1].name, "sum", f"({nodes[0].name},)", "{}"]
    assert "def forward" in graph_text(gm)
    assert isinstance(gm(torch.ones(2)), torch.Tensor)


def test_bytecode_listing_puts_each_offset_on_its_own_line():
    frame = FrameTrace("sample_fn", sample_fn.__code__)
    lines, index_of_offset = bytecode_listing(frame)
    for offset, opname, *_ in frame.bytecode:
        fields = lines[index_of_offset[offset]].split()
        assert opname in fields and str(offset) in fields
    source_lines = {row[3] for row in frame.bytecode}
    assert lines.count("") == len(source_lines) - 1
    jump_target = next(row[0] for row in frame.bytecode if row[4])
    assert ">>" in lines[index_of_offset[jump_target]]
