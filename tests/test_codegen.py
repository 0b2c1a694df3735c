"""Generated code: a graph call plus the return value rebuilt from outputs, constants and
sources, run through the frame hook like a real cache entry."""

import dis

import pytest
import torch

from bytegraph import _frame
from bytegraph._C import codegen, guards


class GraphOutput:
    def __init__(self, index):
        self.index = index


class Constant:
    def __init__(self, value):
        self.value = value


def run_hooked(fn, new_code, tree, *args, **kwargs):
    """Calls fn with `new_code` installed as its only cache entry (guarded by `tree`)."""
    _frame.clear_cache(fn.__code__)
    _frame.add_entry(fn, new_code, tree)
    try:
        with _frame.hooked(lambda info: None):
            return fn(*args, **kwargs)
    finally:
        _frame.clear_cache(fn.__code__)


def test_graph_call_returns_rebuilt_structure():
    def f(x, y, n=2):
        return x + y

    code = codegen.generate_graph_call(
        f.__code__,
        [guards.local("x", 0), guards.local("y", 1)],
        lambda a, b: (a + b, a * b),
        {"sum": GraphOutput(0), "pair": (GraphOutput(1), Constant(7)), "n": guards.local("n", 2)},
    )
    x, y = torch.ones(2), torch.full((2,), 3.0)
    out = run_hooked(f, code, None, x, y, n=5)
    assert torch.equal(out["sum"], x + y)
    assert torch.equal(out["pair"][0], x * y) and out["pair"][1] == 7
    assert out["n"] == 5
    opnames = [i.opname for i in dis.get_instructions(code)]
    assert "CALL" in opnames and opnames[-1] == "RETURN_VALUE"


def test_inputs_from_attributes_items_globals_and_closures():
    scale = torch.tensor([10.0])

    def f(obj, xs):
        return scale

    code = codegen.generate_graph_call(
        f.__code__,
        [guards.local("obj", 0).attr("weight"), guards.local("xs", 1).item(1), guards.closure("scale", 0)],
        lambda w, x, s: (w * x * s,),
        GraphOutput(0),
    )
    obj = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        obj.weight.fill_(2.0)
    xs = [torch.ones(1), torch.full((1,), 3.0)]
    out = run_hooked(f, code, None, obj, xs)
    assert out.item() == pytest.approx(60.0)


def test_guard_tree_selects_entry_and_falls_back_to_the_original():
    def f(x):
        return x - 1

    gs = guards.GuardSet()
    gs.add_tensor_match(guards.local("x", 0), torch.zeros(3))
    code = codegen.generate_graph_call(f.__code__, [guards.local("x", 0)], lambda x: (x + 100,), GraphOutput(0))
    tree = gs.build()
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
    code = codegen.generate_graph_call(f.__code__, [], None, guards.local("x", 0))
    _frame.add_entry(f, code, tree)
    try:
        with pytest.raises(ValueError, match="already used"):
            _frame.add_entry(f, code, tree)
    finally:
        _frame.clear_cache(f.__code__)


def test_cell_arguments_are_read_through_their_cell():
    def f(x):
        def inner():
            return x

        return inner

    code = codegen.generate_graph_call(f.__code__, [guards.local("x", 0)], lambda x: (x * 2,), GraphOutput(0))
    assert torch.equal(run_hooked(f, code, None, torch.ones(1)), torch.full((1,), 2.0))


def test_bad_plan_is_a_type_error():
    def f(x):
        return x

    with pytest.raises(TypeError, match="cannot rebuild"):
        codegen.generate_graph_call(f.__code__, [], None, object())
