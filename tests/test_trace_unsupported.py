"""What the tracer declines: each case raises bytegraph._C.Unsupported with a stable kind,
the user's location, and the graph rolled back to the breaking instruction."""

import os

import pytest
import torch

import bytegraph._C as C
from tests._trace_helpers import call_prefix, trace


def break_kind(fn, *args, **kwargs):
    with pytest.raises(C.Unsupported) as info:
        trace(fn, *args, **kwargs)
    return info.value


def test_an_opcode_without_a_handler():
    def f(x):
        class Local:
            pass

        return x + 1

    error = break_kind(f, torch.ones(2))
    assert error.kind == "unsupported_opcode"
    assert "LOAD_BUILD_CLASS" in error.message
    assert f"{__file__}:" in error.message and "in f" in error.message


def test_branch_on_a_tensor():
    def f(x):
        while x.sum() > 0:
            x = x - 1
        return x

    assert break_kind(f, torch.ones(2)).kind == "data_dependent_branch"


def test_print_is_a_break():
    def f(x):
        print("hello")
        return x

    assert break_kind(f, torch.ones(2)).kind == "print"


def test_item_and_data_dependent_output_shapes():
    def item(x):
        return x.sum().item()

    def branch_on_item(x):
        return x + 1 if x.sum().item() > 0 else x - 1

    def nonzero(x):
        return torch.nonzero(x)

    # A trace that may split breaks at .item(); one that may not (fullgraph) keeps it in the
    # graph, and breaks where a decision needs its value.
    whole = trace(item, torch.ones(2))
    assert [node.target for node in whole.graph_module.graph.nodes if node.op == "call_method"] == ["sum", "item"]
    split = C.trace.trace(item, (torch.ones(2),), allow_graph_break=True)
    assert split.graph_break["kind"] == "data_dependent_op"
    assert break_kind(branch_on_item, torch.ones(2)).kind == "data_dependent_branch"
    assert break_kind(nonzero, torch.ones(2)).kind == "data_dependent_op"


def _explicit_break():
    pass


_explicit_break._bytegraph_graph_break = True


def test_explicit_graph_break_marker():
    def f(x):
        y = x + 1
        _explicit_break()
        return y

    error = break_kind(f, torch.ones(2))
    assert error.kind == "explicit_graph_break"
    assert [n.target.__name__ for n in error.partial.graph_module.graph.nodes if n.op == "call_function"] == ["add"]


def test_unknown_c_function():
    def f(x):
        return x + os.getpid()

    assert break_kind(f, torch.ones(1)).kind == "unsupported_call"


def test_infinite_generators_hit_the_item_limit():
    def naturals():
        n = 0
        while True:
            yield n
            n += 1

    def f(x):
        return x + len(list(naturals()))

    error = break_kind(f, torch.ones(1))
    assert error.kind == "generator" and "10000" in error.message


def test_a_generator_function_as_the_outermost_frame_is_declined():
    def gen(x):
        yield x

    assert break_kind(gen, torch.ones(1)).kind == "generator"


def test_bad_call_of_an_inlined_function_is_a_break_not_a_crash():
    def g(a, b):
        return a + b

    def f(x):
        return g(x)

    error = break_kind(f, torch.ones(1))
    assert error.kind == "bad_call" and "missing" in error.message


def _helper_that_breaks(y):
    z = y * 2
    print(z)
    return z


def test_rollback_from_deep_inside_an_inlined_call():
    def f(x):
        a = x + 1
        b = _helper_that_breaks(a)
        return b

    error = break_kind(f, torch.ones(2))
    assert error.kind == "print"
    partial = error.partial
    # The multiplication recorded inside the call is gone, and so are the guards read there.
    ops = [n.target.__name__ for n in partial.graph_module.graph.nodes if n.op == "call_function"]
    assert ops == ["add"]
    assert not any("print" in line for line in partial.guards)
    assert any(line.startswith("G['_helper_that_breaks']") for line in partial.guards)
    # The user stack names both frames, outermost first; the break is at f's CALL.
    assert len(error.user_stack) == 2
    assert error.user_stack[0].endswith("in f") and error.user_stack[1].endswith("in _helper_that_breaks")
    assert partial.graph_break["opname"] == "CALL"
    # The live tensor `a` is a graph output, so the rest of f could continue from it.
    (out,) = [o for o in partial.graph_module(*partial.example_inputs) if o.shape == (2,) and o[0] == 2]
    torch.testing.assert_close(out, torch.full((2,), 2.0))


def test_rollback_drops_inputs_created_by_the_abandoned_instruction():
    def f(x):
        y = x * 3
        return _helper_reading_global_then_breaking(y)

    error = break_kind(f, torch.ones(2))
    assert error.partial.inputs == ["L['x']"]
    assert len([n for n in error.partial.graph_module.graph.nodes if n.op == "placeholder"]) == 1


_GLOBAL = torch.ones(2)


def _helper_reading_global_then_breaking(y):
    w = y + _GLOBAL
    print(w)
    return w


def _appends_then_breaks(out, y):
    out.append(y * 2)
    print(out)


def test_rollback_restores_containers_mutated_inside_the_instruction():
    def f(x):
        out = [x]
        steps = iter([1, 2, 3])
        next(steps)
        _appends_then_breaks(out, x)
        return out

    error = break_kind(f, torch.ones(2))
    state = error.partial.graph_break
    assert state["locals"]["out"] == "ListVariable([TensorVariable(l_x_: f32[2])])"
    assert state["locals"]["steps"] == "ListIteratorVariable(length=3, index=1)"
    assert state["stack"] == call_prefix("UserFunctionVariable(_appends_then_breaks)") + [
        "ListVariable([TensorVariable(l_x_: f32[2])])", "TensorVariable(l_x_: f32[2])"]


def _consumes_iterator_then_breaks(steps):
    first = next(steps)
    print(first)


def test_rollback_restores_iterators_advanced_inside_the_instruction():
    def f(x):
        steps = iter([x, x])
        _consumes_iterator_then_breaks(steps)
        return x

    state = break_kind(f, torch.ones(2)).partial.graph_break
    assert state["locals"]["steps"] == "ListIteratorVariable(length=2, index=0)"


def test_python_errors_raised_while_tracing_become_breaks():
    layers = torch.nn.ModuleList([torch.nn.ReLU()])

    def f(x):
        y = x + 1
        return layers[3](y)

    error = break_kind(f, torch.ones(1))
    assert error.kind == "python_error" and "IndexError" in error.message
    assert [n.op for n in error.partial.graph_module.graph.nodes].count("call_function") == 1
