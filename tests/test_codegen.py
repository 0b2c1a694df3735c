"""Generated code: a graph call plus the return value rebuilt from outputs, constants and
sources, planned in C++ from a trace result and run through the frame hook like a real cache
entry."""

import dis

import pytest
import torch

from bytegraph import _frame
from bytegraph._C import codegen, guards, trace


def run_hooked(fn, new_code, tree, *args, **kwargs):
    """Calls fn with `new_code` installed as its only cache entry (guarded by `tree`)."""
    _frame.clear_cache(fn.__code__)
    _frame.add_entry(fn, new_code, tree)
    try:
        with _frame.hooked(lambda info: None):
            return fn(*args, **kwargs)
    finally:
        _frame.clear_cache(fn.__code__)


def generate(fn, args, compiled, kwargs=None):
    """The code the compile path makes for fn(*args), calling `compiled` as the graph."""
    result = trace.trace(fn, tuple(args), kwargs or {})
    plan = codegen.plan_frame(fn.__code__, result)
    assert plan.eager_reason is None and not plan.is_split
    return plan.generate(compiled), result


def test_graph_call_returns_rebuilt_structure_from_the_compiled_outputs():
    def f(x, y, n=2):
        return {"sum": x + y, "pair": (x * y, 7), "n": n}

    x, y = torch.ones(2), torch.full((2,), 3.0)
    # A stand-in for the backend's callable: its outputs, not the traced graph's, come back.
    code, result = generate(f, (x, y, 5), lambda a, b: (a + b + 100, a * b + 100))
    out = run_hooked(f, code, None, x, y, n=5)
    assert torch.equal(out["sum"], x + y + 100)
    assert torch.equal(out["pair"][0], x * y + 100) and out["pair"][1] == 7
    assert out["n"] == 5
    opnames = [i.opname for i in dis.get_instructions(code)]
    assert "CALL" in opnames and opnames[-1] == "RETURN_VALUE"


def test_inputs_from_attributes_items_and_closures_are_read_again():
    scale = torch.tensor([10.0])

    def f(obj, xs):
        return obj.weight * xs[1] * scale

    obj = torch.nn.Linear(1, 1, bias=False)
    xs = [torch.ones(1), torch.full((1,), 3.0)]
    code, result = generate(f, (obj, xs), lambda *inputs: (inputs[0] * inputs[1] * 2,))
    assert result.inputs == ["L['xs'][1]", "closure['scale']"]
    out = run_hooked(f, code, None, obj, [torch.ones(1), torch.full((1,), 5.0)])
    assert torch.equal(out, torch.full((1,), 100.0))  # the new list's item, the closure's tensor


def test_guard_tree_selects_entry_and_falls_back_to_the_original():
    def f(x):
        return x - 1

    code, result = generate(f, (torch.zeros(3),), lambda x: (x + 100,))
    tree = result.build_guards()
    _frame.clear_cache(f.__code__)
    _frame.add_entry(f, code, tree)
    try:
        with _frame.hooked(lambda info: None):
            assert torch.equal(f(torch.zeros(3)), torch.full((3,), 100.0))  # guards pass: generated code
            assert torch.equal(f(torch.zeros(4)), torch.full((4,), -1.0))  # shape differs: original
    finally:
        _frame.clear_cache(f.__code__)


def test_a_tree_cannot_serve_two_entries():
    def f(x):
        return x

    tree = guards.GuardSet().build()
    code, _ = generate(f, (torch.ones(1),), None)
    _frame.add_entry(f, code, tree)
    try:
        with pytest.raises(ValueError, match="already used"):
            _frame.add_entry(f, code, tree)
    finally:
        _frame.clear_cache(f.__code__)


def test_an_input_passed_through_is_the_same_object():
    def f(x):
        return x

    code, result = generate(f, (torch.ones(1),), None)
    assert result.op_count == 0
    x = torch.ones(1)
    assert run_hooked(f, code, None, x) is x


def test_cell_arguments_are_read_through_their_cell():
    def f(x):
        def inner():
            return x

        return x * 2

    code, _ = generate(f, (torch.ones(1),), lambda x: (x * 3,))
    assert torch.equal(run_hooked(f, code, None, torch.ones(1)), torch.full((1,), 3.0))


def test_a_plan_for_another_code_is_refused():
    def f(x):
        return x + 1

    def g(x):
        return x + 1

    result = trace.trace(f, (torch.ones(1),))
    with pytest.raises(SystemError, match="not of this code"):
        codegen.plan_frame(g.__code__, result)
