"""Graph breaks: frames split at the breaking instruction and continued in resume functions.

Every compiled result is compared with the same function run eagerly on fresh inputs; the
graphs are checked by recording what the backend receives."""

import functools
import logging

import pytest
import torch

import bytegraph
from bytegraph import _bridge, _frame, _readable_code, examples
from bytegraph.bytecode import decode
from bytegraph._extension import _C
from bytegraph.testing import CompileCounter


class RecordingBackend:
    """A backend that keeps each graph's (placeholder names, call targets in order)."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
        calls = [_target_name(n.target) for n in gm.graph.nodes if n.op.startswith("call_")]
        self.graphs.append((placeholders, calls))
        return gm.forward

    def calls(self):
        return [calls for _, calls in self.graphs]

    @property
    def frame_count(self):
        return len(self.graphs)


def _target_name(target):
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def assert_same(result, expected):
    if isinstance(expected, torch.Tensor):
        assert isinstance(result, torch.Tensor) and torch.equal(result, expected)
        assert result.requires_grad == expected.requires_grad
    elif isinstance(expected, (tuple, list)):
        assert type(result) is type(expected) and len(result) == len(expected)
        for r, e in zip(result, expected):
            assert_same(r, e)
    elif isinstance(expected, dict):
        assert result.keys() == expected.keys()
        for key in expected:
            assert_same(result[key], expected[key])
    else:
        assert result == expected


# ---- the seed's examples ------------------------------------------------------------------


foo1 = examples.foo1
foo2 = examples.foo2


def test_foo1_both_branches_match_eager_and_split_at_the_branch():
    backend = RecordingBackend()
    compiled = bytegraph.compile(foo1, backend=backend)
    a, b = torch.ones(2, 3), torch.ones(2, 3)
    assert_same(compiled(a, b), foo1(a, b))
    assert_same(compiled(a, -b), foo1(a, -b))
    calls = backend.calls()
    assert calls[0] == ["add", "sum", "lt"]
    # The taken side of the branch (x * -1) is a graph of its own; the other side only
    # returns x, which needs no graph.
    assert ["mul"] in calls[1:]


@pytest.mark.parametrize("sign_a", [1, -1])
@pytest.mark.parametrize("sign_b", [1, -1])
def test_foo2_every_sign_combination_matches_eager(sign_a, sign_b):
    backend = RecordingBackend()
    compiled = bytegraph.compile(foo2, backend=backend)
    a, b = sign_a * torch.ones(2, 3), sign_b * torch.ones(2, 3)
    assert_same(compiled(a, b), foo2(a, b))
    calls = backend.calls()
    assert calls[0] == ["add", "sum", "lt"]
    # The seed's graphs: after the first branch, either (x * -1, a.sum() < 0) or
    # (a.sum() < 0); after the second, (x * -2, 2 * x) or (2 * x).
    second = ["mul", "sum", "lt"] if sign_b < 0 else ["sum", "lt"]
    third = ["mul", "mul"] if sign_a < 0 else ["mul"]
    assert calls[1:] == [second, third]


def test_foo2_all_combinations_in_one_process_reuse_resume_functions():
    backend = RecordingBackend()
    compiled = bytegraph.compile(foo2, backend=backend)
    a, b = torch.ones(2, 3), torch.ones(2, 3)
    for sa, sb in [(1, 1), (-1, 1), (1, -1), (-1, -1), (1, 1), (-1, -1)]:
        assert_same(compiled(sa * a, sb * b), foo2(sa * a, sb * b))
    # 1 graph for the frame, 2 after the first branch, 2 after the second: then all cached.
    assert len(backend.graphs) == 5
    assert _C.codegen.resume_cache_size() == 4  # two continuations per branch


def test_resume_graphs_take_the_live_values_as_inputs():
    backend = RecordingBackend()
    compiled = bytegraph.compile(foo2, backend=backend)
    compiled(torch.ones(2, 3), -torch.ones(2, 3))
    placeholders = [names for names, _ in backend.graphs]
    assert placeholders[0] == ["l_a_", "l_b_"]
    # b is dead after the first branch: only a and x reach the resumed graph.
    assert sorted(placeholders[1]) == ["l_a_", "l_x_"]


def test_break_state_names_the_stack_and_live_locals():
    result = _C.trace.trace(foo2, (torch.ones(2), torch.ones(2)), {}, allow_graph_break=True)
    info = result.graph_break
    assert info["restorable"]
    assert info["opname"].startswith("POP_JUMP")
    assert info["stack_plan"] == [_bridge.GraphOutput(1)]
    assert info["locals_plan"] == {"a": info["locals_plan"]["a"], "x": _bridge.GraphOutput(0)}
    assert "b" not in info["locals_plan"]


def test_an_explicit_graph_break_splits_the_frame():
    def f(x):
        y = x + 1
        bytegraph.graph_break()
        return y * 2

    backend = RecordingBackend()
    run_both(f, torch.randn(3), backend=backend)
    assert backend.calls() == [["add"], ["mul"]]


# ---- the resume-function code objects -----------------------------------------------------


def test_resume_functions_of_resume_functions_are_built_from_the_original_code():
    compiled = bytegraph.compile(foo2, backend="eager")
    for sa, sb in [(1, 1), (-1, -1)]:
        compiled(sa * torch.ones(2), sb * torch.ones(2))
    original_offsets = {inst.offset for inst in decode(foo2.__code__)}
    assert _C.codegen.resume_cache_size() == 4
    for code in _C.codegen.resume_codes():
        original, mapping = _C.codegen.resume_origin(code)
        assert original is foo2.__code__
        _, offset, _ = _C.codegen.resume_continuation(code)
        assert offset in original_offsets
        assert code.co_name == f"foo2 (resumed at line {_readable_code.line_at(foo2.__code__, offset)})"
        # Everything after the prologue is the original code, instruction for instruction.
        assert set(mapping.values()) <= original_offsets
        assert len(mapping) == len([i for i in decode(foo2.__code__) if i.opname != "RESUME"])


def test_resume_functions_are_named_after_the_user_function_and_line_and_cached():
    compiled = bytegraph.compile(foo1, backend="eager")
    compiled(torch.ones(2), torch.ones(2))
    first = foo1.__code__.co_firstlineno
    # The branch taken (x = x * -1, line 4 of foo1) and the one skipped (return x, line 5).
    names = sorted(code.co_name for code in _C.codegen.resume_codes())
    assert names == [f"foo1 (resumed at line {first + 3})", f"foo1 (resumed at line {first + 4})"]
    assert sorted(code.co_qualname for code in _C.codegen.resume_codes()) == names
    before = set(_C.codegen.resume_codes())
    compiled(torch.ones(2), -torch.ones(2))
    compiled(torch.ones(3), torch.ones(3))  # a recompile reuses the same resume functions
    assert set(_C.codegen.resume_codes()) == before


def test_a_resume_function_runs_the_rest_of_the_original_code():
    def f(a, b):
        c = a * 2
        d = b + c
        return d, c

    code = f.__code__
    # `d = b + c` starts by loading b (3.13 loads b and c in one LOAD_FAST_LOAD_FAST).
    offset = next(i.offset for i in decode(code)
                  if i.opname.startswith("LOAD_FAST") and i.argval in ("b", ("b", "c")))
    resume, offsets = _C.codegen.make_resume_code(code, offset, [], ["b", "c"], "__resume_at_test")
    assert resume.co_varnames[:2] == ("b", "c") and resume.co_argcount == 2
    assert offsets[min(offsets)] == min(offsets.values())
    fn = type(f)(resume, f.__globals__)
    assert fn(10, 4) == (14, 4)


def test_a_resume_function_rebuilds_nulls_and_iterators_from_arguments():
    def f(xs):
        total = 0
        for x in xs:
            total = total + len([x])
        return total

    code = f.__code__
    body = next(i for i in decode(code) if i.opname == "STORE_FAST" and i.argval == "x")
    resume, _ = _C.codegen.make_resume_code(code, body.offset, ["iter", "value"], ["total"], "__resume_at_t")
    fn = type(f)(resume, f.__globals__)
    # Resumed with x = "a" about to be stored and two items left: 3 iterations in all.
    # Arguments: the live locals (total), then the stack (the iterator's items, the value).
    assert fn(10, ("b", "c"), "a") == 13


def test_liveness_drops_dead_locals():
    def f(a, b):
        x = a + b
        y = x * 2
        return y

    instructions = decode(f.__code__)
    store_y = next(i for i in instructions if i.opname == "STORE_FAST" and i.argval == "y")
    assert _C.codegen.live_locals(f.__code__, instructions[0].offset) == ["a", "b"]
    assert _C.codegen.live_locals(f.__code__, store_y.offset) == []


# ---- where breaks happen ------------------------------------------------------------------


def run_both(fn, *args, calls=None, backend=None):
    """Runs fn compiled (from a fresh cache) and eagerly: same result; `calls` is what the
    backend must have been given, the call targets of each graph in order."""
    bytegraph.reset()
    backend = backend or RecordingBackend()
    compiled = bytegraph.compile(fn, backend=backend)
    result = compiled(*args)
    expected = fn(*args)
    assert_same(result, expected)
    if calls is None:
        assert isinstance(backend, RecordingBackend), "pass calls=[...] or check the backend's graphs"
    else:
        assert backend.calls() == calls
    return backend


def test_break_in_a_loop_body(capsys):
    def f(x):
        for i in range(3):
            x = x * 2
            print("iteration", i)
            x = x + 1
        return x

    counter = run_both(f, torch.randn(3), calls=[["mul"]])
    # The first iteration up to the print is a graph; the rest of the loop runs in a resume
    # function that is not split again (that would nest a call per iteration).
    assert counter.frame_count >= 1
    out = capsys.readouterr().out
    assert out.count("iteration 0") == 2 and out.count("iteration 2") == 2


def test_a_long_loop_with_a_break_does_not_nest_calls():
    def f(x, n):
        total = x
        for i in range(n):
            total = total + 1
            SINK.append(i)  # a mutation of a global list: a break
        return total

    # The appends are replayed after the graph: the loop is one graph, no nested calls.
    run_both(f, torch.zeros(2), 5000, calls=[["add"] * 5000])
    assert len(SINK) == 10000
    SINK.clear()


def test_break_in_a_nested_helper_splits_the_caller_at_its_call(capsys):
    def helper(y):
        print("helper")
        return y + 1

    def f(x):
        y = x.sin()
        z = helper(y)
        return z * 2

    counter = run_both(f, torch.randn(3), calls=[["sin"], ["add"], ["mul"]])
    # y.sin() in the caller, y + 1 in the helper (its own frame), z * 2 after the call.
    assert counter.frame_count == 3


class _Helper:
    def helper(self, h):
        print("helper")
        return h + 1


class _OtherHelper:
    def helper(self, h):
        print("other")
        return h - 100


def test_break_in_a_user_method_splits_the_caller_at_the_method_call(capsys):
    def f(x, obj):
        y = x.sin()
        return obj.helper(y) * 3

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    x = torch.randn(3)
    assert_same(compiled(x, _Helper()), f(x, _Helper()))
    assert counter.frame_count == 3  # sin; the method's own resume (h + 1); * 3
    assert_same(compiled(x, _OtherHelper()), f(x, _OtherHelper()))


def test_break_in_a_module_method(capsys):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)

        def helper(self, h):
            print("helper")
            return h * 2

        def forward(self, x):
            return self.helper(self.linear(x)).relu()

    m = M()
    counter = CompileCounter()
    x = torch.randn(2, 4)
    result = bytegraph.compile(m, backend=counter)(x)
    assert torch.allclose(result, m(x))
    assert counter.frame_count == 3
    result.sum().backward()
    assert m.linear.weight.grad is not None


def test_break_under_no_grad_matches_eager(capsys):
    def f(x):
        a = x * 3
        with torch.no_grad():
            y = x * 2
            print("inside")
            y = y + 1
        return y, a + y

    x = torch.randn(3, requires_grad=True)
    backend = RecordingBackend()
    compiled = bytegraph.compile(f, backend=backend)
    result = compiled(x)
    expected = f(x)
    assert_same(result, expected)
    assert torch.is_grad_enabled()
    assert backend.calls() == [
        ["mul", "_set_grad_enabled", "mul"],
        ["_set_grad_enabled", "add", "_set_grad_enabled", "add"],
    ]


def test_break_under_no_grad_is_split_and_the_resume_function_enters_the_block_again(capsys):
    def f(x):
        a = x * 3
        with torch.no_grad():
            y = x * 2
            print("inside", torch.is_grad_enabled())
            y = y + 1
        return y, a + y

    x = torch.randn(3, requires_grad=True)
    counter = run_both(f, x, calls=[["mul", "_set_grad_enabled", "mul"], ["_set_grad_enabled", "add", "_set_grad_enabled", "add"]])
    assert counter.frame_count == 2
    out = capsys.readouterr().out
    assert out.count("inside False") == 2
    assert torch.is_grad_enabled()


def test_break_in_nested_grad_mode_blocks(capsys):
    def f(x):
        a = x * 3
        with torch.no_grad():
            y = x * 2
            with torch.enable_grad():
                z = x * 4
                print("inner", torch.is_grad_enabled())
                w = z + 1
            print("middle", torch.is_grad_enabled())
            y = y + w
        return y, a + y, w

    x = torch.randn(3, requires_grad=True)
    counter = run_both(f, x, calls=[["mul", "_set_grad_enabled", "mul", "_set_grad_enabled", "mul"], ["_set_grad_enabled", "_set_grad_enabled", "add", "_set_grad_enabled"], ["_set_grad_enabled", "add", "_set_grad_enabled", "add"]])
    assert counter.frame_count == 3
    out = capsys.readouterr().out
    assert out.count("inner True") == 2 and out.count("middle False") == 2
    assert torch.is_grad_enabled()


def test_an_exception_at_a_break_under_no_grad_restores_the_mode():
    def fail(y):
        raise ValueError("boom")

    def f(x):
        y = x * 2
        with torch.no_grad():
            y = y + 1
            fail(y)
        return y

    backend = RecordingBackend()
    compiled = bytegraph.compile(f, backend=backend)
    for _ in range(2):
        with pytest.raises(ValueError, match="boom"):
            compiled(torch.randn(3, requires_grad=True))
        assert torch.is_grad_enabled()
    # One graph up to the failing call (the second call hits the cache); the call raises.
    assert backend.calls() == [["mul", "_set_grad_enabled", "add"]]


def test_a_break_in_a_with_block_that_is_not_a_grad_mode_is_split_inside_the_block(tmp_path):
    path = tmp_path / "out.txt"

    def f(x):
        y = x + 1
        with open(path, "w") as handle:
            handle.write("text")
            z = y * 2
        return z

    # open() breaks before the block; the write breaks inside it, and the resume function
    # captures `y * 2` with the file still open (its __exit__ runs after the graph).
    run_both(f, torch.randn(3), calls=[["add"], ["mul"]])
    assert path.read_text() == "text"


def test_break_under_autocast_matches_eager(capsys):
    def f(x):
        y = x + 1
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = torch.mm(y, y)
            print("in autocast")
            w = torch.mm(z, y)
        return w, torch.is_autocast_enabled("cpu")

    # The print inside the block breaks it at its `with` (generated code does not re-enter an
    # autocast block); the resume functions run inside the block, so each mm is under autocast
    # as in eager mode.
    run_both(f, torch.randn(4, 4), calls=[["add"], ["mm"], ["mm"]])
    assert not torch.is_autocast_enabled("cpu")


def test_break_inside_try_finally_matches_eager(capsys, caplog):
    log = []

    def f(x):
        try:
            y = x * 2
            print("in try")
            log.append("body")
        finally:
            log.append("finally")
            y = y + 1
        return y

    with caplog.at_level(logging.INFO, "bytegraph.graph_breaks"):
        run_both(f, torch.randn(3), calls=[["mul"], ["add"]])
    assert "runs eagerly" not in caplog.text
    assert log == ["body", "finally"] * 2


def test_break_inside_try_when_the_break_raises(caplog):
    def boom():
        raise ValueError("boom")

    def f(x):
        y = x * 2
        try:
            boom()
        except ValueError:
            y = y - 1
        return y

    with caplog.at_level(logging.INFO, "bytegraph.graph_breaks"):
        run_both(f, torch.randn(3), calls=[["mul", "sub"]])
    # The exception is raised and caught inside the trace: one graph, no break.
    assert "Graph break" not in caplog.text


class Box:
    pass


GLOBAL_STATE = {"value": None}
GLOBAL_TARGET = 0
SINK = []


def test_mutations_before_a_break_happen_in_program_order():
    events = []

    def f(x, items, box):
        global GLOBAL_TARGET
        y = x + 1
        items.append(y)
        box.attr = y * 2
        GLOBAL_TARGET = 7
        observe(items, box)
        return y * 3

    @bytegraph.disable
    def observe(items, box):  # runs outside the graph: a break that sees the state at that point
        events.append(("observed", len(items), hasattr(box, "attr"), GLOBAL_TARGET))

    x = torch.randn(3)
    items, box = [], Box()
    backend = RecordingBackend()
    result = bytegraph.compile(f, backend=backend)(x, items, box)
    # The append, the attribute and the global are written back after the first graph, before
    # the call that breaks.
    assert backend.calls() == [["add", "mul"], ["mul"]]
    assert torch.equal(result, (x + 1) * 3)
    assert len(items) == 1 and torch.equal(items[0], x + 1)
    assert torch.equal(box.attr, (x + 1) * 2)
    assert GLOBAL_TARGET == 7
    assert events == [("observed", 1, True, 7)]


def test_a_list_made_in_the_frame_and_aliased_keeps_its_identity(caplog):
    def f(x):
        a = []
        b = a
        a.append(x + 1)
        print("break")
        b.append(x * 2)
        return a, a is b

    with caplog.at_level(logging.INFO, "bytegraph.graph_breaks"):
        run_both(f, torch.randn(3), calls=[])
    assert "which is referenced from two places" in caplog.text


def test_an_iterator_shared_by_a_loop_and_a_local(caplog):
    def f(x):
        it = iter([1, 2, 3, 4])
        total = x
        for k in it:
            total = total + k
            print("k", k)
            next(it, None)
        return total

    with caplog.at_level(logging.INFO, "bytegraph.graph_breaks"):
        run_both(f, torch.zeros(2), calls=[])
    assert "which is referenced from two places" in caplog.text


def test_in_place_update_of_an_input_before_a_break():
    def f(x):
        x.add_(1)
        print("after add_")
        return x * 2

    x1, x2 = torch.zeros(3), torch.zeros(3)
    backend = RecordingBackend()
    r1 = bytegraph.compile(f, backend=backend)(x1)
    r2 = f(x2)
    assert torch.equal(r1, r2) and torch.equal(x1, x2)
    assert backend.calls() == [["add_"], ["mul"]]


def test_a_while_loop_on_a_tensor_condition():
    def f(x):
        steps = 0
        while x.sum() > 0:
            x = x - 1
            steps += 1
        return x, steps

    for start in (0.5, 2.5, 4.5):
        run_both(f, torch.full((3,), start), calls=[["sum", "gt"]])


def test_item_and_tolist_flowing_into_python_control_flow():
    def f(x):
        y = x * 2
        if y.sum().item() > 0:
            y = y + 1
        values = y.tolist()
        return y * len(values), values[0]

    for sign in (1, -1):
        # The item() breaks; the taken side and the tolist() are graphs of their own.
        taken = [["add"], ["mul"]] if sign > 0 else [["mul"]]
        run_both(f, sign * torch.ones(3), calls=[["mul", "sum"], *taken])


def test_numpy_in_the_middle():
    numpy = pytest.importorskip("numpy")

    def f(x):
        y = x + 1
        z = torch.from_numpy(numpy.asarray(y) * 2)
        return z - y

    run_both(f, torch.randn(3), calls=[["add"], ["sub"]])


def test_values_of_every_kind_on_the_stack_at_the_break():
    def f(x):
        t = (x, 1)
        d = {"a": x, "b": 2}
        return [x * 2, 3, t, d, "s", None, print("break") or x.cos()]

    run_both(f, torch.randn(3), calls=[["mul"], ["cos"]])


def test_the_null_of_a_call_and_a_method_on_the_stack():
    def f(x):
        y = x + 1
        a = torch.add(y, print("one") or y)  # [NULL, torch.add, y, ...]
        b = y.mul(print("two") or 3)  # [NULL, y.mul, ...]
        return a, b

    counter = run_both(f, torch.randn(3), calls=[["add"], ["add"]])
    assert counter.frame_count >= 2


SWAPPED = torch.ones(3)


def _rebind_swapped():
    global SWAPPED
    torch._dynamo.graph_break()  # the caller breaks at this call
    SWAPPED = torch.zeros(3)


def test_values_read_before_the_break_are_not_read_again_after_it():
    global SWAPPED

    def f(x):
        old = SWAPPED
        alias = x
        x = x + 1
        pair = torch.add(SWAPPED, _rebind_swapped() or alias)  # the call rebinds SWAPPED
        return old + x + pair

    SWAPPED = torch.ones(3)
    x = torch.randn(3)
    backend = RecordingBackend()
    compiled_result = bytegraph.compile(f, backend=backend)(x)
    assert backend.calls() == [["add"], ["zeros"], ["add", "add", "add"]]
    SWAPPED = torch.ones(3)
    assert torch.equal(compiled_result, f(x))
    assert torch.equal(SWAPPED, torch.zeros(3))


def test_a_break_at_a_call_with_star_args(capsys):
    def f(x):
        y = x * 2
        parts = ("a", "b")
        print(*parts, sep="+")
        return y - 1

    counter = run_both(f, torch.randn(3), calls=[["mul"], ["sub"]])
    assert counter.frame_count == 2
    assert capsys.readouterr().out == "a+b\n" * 2


def test_keyword_arguments_of_the_breaking_call():
    def f(x):
        y = x + 1
        print("a", "b", sep="-", end="\n")
        return torch.add(y, y, alpha=2)

    counter = run_both(f, torch.randn(3), calls=[["add"], ["add"]])
    assert counter.frame_count == 2


def test_closures_keep_working_in_resume_functions():
    scale = torch.tensor(3.0)

    def f(x):
        y = x * scale
        print("closure")
        return y + scale

    counter = run_both(f, torch.randn(3), calls=[["mul"], ["add"]])
    assert counter.frame_count == 2


def test_cell_variables_written_before_a_break_reach_closures_made_after_it(capsys):
    def f(x):
        y = x * 2  # a cell: the lambda below reads it
        print("break")
        scale = lambda t: t * y  # noqa: E731
        return scale(x) + y

    counter = run_both(f, torch.randn(3), calls=[["mul"], ["mul", "add"]])
    assert counter.frame_count == 2


def test_a_closure_made_before_the_break_shares_the_cell_with_the_resumed_code(capsys):
    def f(x):
        total = x + 1

        def bump():
            nonlocal total
            total = total * 2

        print("break")
        bump()
        bump()
        return total

    run_both(f, torch.randn(3), calls=[["add"], ["mul", "mul"]])


def test_functions_made_before_the_break_are_made_again_with_defaults_and_closure(capsys):
    def f(x):
        offset = x.cos()

        def shift(t, k=2, *, scale=3):
            return (t + offset) * k * scale

        twice = shift
        print("break")
        return shift(x), shift(x, 1, scale=1), twice is shift

    run_both(f, torch.randn(3), calls=[["add", "mul", "mul"], ["add", "mul", "mul"]])


def test_ten_breaks_in_one_function(capsys):
    def f(x):
        x = x + 1
        print(1)
        x = x * 2
        print(2)
        x = x - 3
        print(3)
        x = x / 4
        print(4)
        x = x + 5
        print(5)
        x = x * 6
        print(6)
        x = x - 7
        print(7)
        x = x / 8
        print(8)
        x = x + 9
        print(9)
        x = x * 10
        print(10)
        x = x - 11
        return x

    counter = run_both(f, torch.randn(3), calls=[["add"], ["mul"], ["sub"], ["truediv"], ["add"], ["mul"], ["sub"], ["truediv"], ["add"], ["mul"], ["sub"]])
    assert counter.frame_count == 11


def test_many_calls_with_alternating_branches_stay_bounded():
    compiled = bytegraph.compile(foo2, backend="eager")
    a = torch.ones(2, 3)
    for i in range(1000):
        sa, sb = (1 if i % 2 else -1), (1 if i % 3 else -1)
        assert_same(compiled(sa * a, sb * a), foo2(sa * a, sb * a))
    assert _C.codegen.resume_cache_size() == 4
    codes = [foo2.__code__] + list(_C.codegen.resume_codes())
    assert sum(len(_frame.cache_entries(code)) for code in codes) <= 5


# ---- errors and logs ----------------------------------------------------------------------


def test_fullgraph_reports_the_break():
    with pytest.raises(bytegraph.exc.GraphBreakError) as info:
        bytegraph.compile(foo2, backend="eager", fullgraph=True)(torch.ones(2), torch.ones(2))
    message = str(info.value)
    assert "data_dependent_branch" in message
    assert "if b.sum() < 0:" in message and "Hint:" in message
    assert info.value.lineno == foo2.__code__.co_firstlineno + 2
    assert _C.codegen.resume_cache_size() == 0


def test_bytecode_logs(caplog):
    with caplog.at_level(logging.DEBUG, logger="bytegraph.bytecode"):
        bytegraph.compile(foo1, backend="eager")(torch.ones(2), torch.ones(2))
    text = caplog.text
    assert "ORIGINAL BYTECODE" in text and "MODIFIED BYTECODE" in text
    assert f"RESUME FUNCTION foo1 (resumed at line {foo1.__code__.co_firstlineno + 3})" in text
    assert "JUMP_FORWARD" in text


class _ScaleBase:
    def scale(self):
        return 2.0


class _SuperChild(_ScaleBase):
    def f(self, x):
        y = x + 1
        if y.sum() > 0:
            y = y * 3
        return y * super().scale()


def test_zero_argument_super_works_in_resume_functions():
    child = _SuperChild()
    counter = CompileCounter()
    compiled = bytegraph.compile(child.f, backend=counter)
    for x in (torch.ones(3), -torch.ones(3) * 5):
        assert torch.equal(compiled(x), child.f(x))
    assert counter.frame_count >= 2  # the graph before the break and a resumed graph


def _make_self_referential():
    def forward_with_checkpointing(x):
        if forward_with_checkpointing is None:  # reads its own cell, as transformers' layers do
            return x
        return x * 2

    return forward_with_checkpointing


_SELF_REFERENTIAL = _make_self_referential()


def test_a_closure_holding_its_own_function_is_captured_without_recursion():
    def f(x):
        return _SELF_REFERENTIAL(x) + 1

    counter = CompileCounter()
    out = bytegraph.compile(f, backend=counter)(torch.ones(2))
    assert torch.equal(out, f(torch.ones(2)))
    assert counter.frame_count == 1


def test_a_list_containing_itself_does_not_crash_the_tracer(caplog):
    cyclic = []
    cyclic.append(cyclic)

    def f(x, items):
        return x + len(items)

    backend = RecordingBackend()
    with caplog.at_level(logging.INFO, "bytegraph.graph_breaks"):
        out = bytegraph.compile(f, backend=backend)(torch.ones(2), cyclic)
    assert torch.equal(out, torch.full((2,), 2.0))
    # Wrapping the argument stops at a fixed depth: a break, and the frame runs eagerly.
    assert backend.calls() == [] and "(cyclic_value)" in caplog.text


def _decorated(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        for name in ("scale",):
            kwargs[name] = 2  # a change to the wrapper's own kwargs dict: written back after the graph
        return func(*args, **kwargs)

    return wrapper


@_decorated
def _decorated_target(x, scale=1):
    return x * scale


def test_a_functools_wraps_wrapper_binds_its_own_arguments():
    counter = CompileCounter()
    compiled = bytegraph.compile(_decorated_target, backend=counter)
    x = torch.ones(3)
    assert torch.equal(compiled(x), _decorated_target(x))
    # The wrapper's own (*args, **kwargs) are bound, not the signature __wrapped__ advertises,
    # and the change to kwargs is traced: one graph, scaled by 2.
    assert counter.frame_count == 1 and counter.op_count == 1
    result = _C.trace.trace(_decorated_target, (x,), {}, allow_graph_break=True)
    assert result.graph_break is None
    assert [n.args[1] for n in result.graph_module.graph.nodes if n.op == "call_function"] == [2]


def test_a_comprehension_frame_that_breaks_keeps_its_iterator():
    def f(xs):
        return {float(x.sum()) for x in xs}  # float() of a tensor: a break inside <setcomp>

    xs = [torch.ones(2), torch.full((2,), 3.0)]
    assert bytegraph.compile(f, backend="eager")(xs) == f(xs)
    nested = [c for c in f.__code__.co_consts if isinstance(c, type(f.__code__))]
    if not nested:  # 3.12+ inlines the comprehension into f (PEP 709): f itself breaks inside it
        result = _C.trace.trace(f, (xs,), {}, allow_graph_break=True)
        assert result.graph_break is not None and result.graph_break["kind"] != "unbound_local"
        return
    fn = type(f)(nested[0], f.__globals__)
    result = _C.trace.trace(fn, (iter(xs),), {}, allow_graph_break=True)
    assert result.graph_break is None or result.graph_break["kind"] != "unbound_local"


# ---- loops over lists resumed after a break ------------------------------------------------


def test_a_loop_resumed_after_a_break_reads_the_list_as_its_body_changes_it():
    def f(a, items):
        a = a * 2
        for item in items:
            print("in the loop")  # a graph break in the body
            a = a + item
            if len(items) < 4:
                items.append(item * 2)
        return a

    def inputs():
        return torch.ones(2), [torch.ones(2), torch.full((2,), 3.0)]

    a, items = inputs()
    expected = f(a, items)
    counter = CompileCounter()
    a2, items2 = inputs()
    assert torch.equal(bytegraph.compile(f, backend=counter)(a2, items2), expected)
    assert len(items2) == len(items) == 4
    assert counter.frame_count >= 1


def test_a_list_made_in_the_frame_stays_one_list_for_the_local_and_the_resumed_loop():
    def f(a):
        items = [a, a + 1]
        for item in items:
            print("in the loop")
            if len(items) < 4:
                items.append(item * 2)
        return torch.stack(items).sum(0), len(items)

    x = torch.ones(2)
    expected = f(x)
    counter = CompileCounter()
    result = bytegraph.compile(f, backend=counter)(x)
    assert torch.equal(result[0], expected[0]) and result[1] == expected[1] == 4
    assert counter.frame_count >= 1 and counter.op_count >= 1


def test_a_resumed_list_loop_is_guarded_on_where_it_resumes():
    # The break comes at iteration k (a trace-time constant): resume functions are shared by
    # break site, so the one entered at index 1 must not be reused at index 2.
    def f(a, items, k):
        a = a * 2
        seen = 0
        for item in items:
            if seen == k:
                print("break at", k)
            a = a + item * seen
            seen += 1
        return a

    items = [torch.full((2,), float(v)) for v in (1, 2, 3, 4)]
    counter = CompileCounter()
    cf = bytegraph.compile(f, backend=counter)
    for k in (0, 1, 2):
        assert torch.equal(cf(torch.ones(2), items, k), f(torch.ones(2), items, k))
    assert counter.frame_count >= 3  # each k: its own graph before the break
    # The loop went on in resume functions given the list and its index.
    stacks = [_C.codegen.resume_continuation(code)[2] for code in _C.codegen.resume_codes()
              if _C.codegen.resume_continuation(code)[0] is f.__code__]
    assert any("list_iter" in stack for stack in stacks)
