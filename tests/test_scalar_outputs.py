"""Scalars read from tensors (`.item()`, `.tolist()`) kept in the graph, as torch.compile keeps
them under `capture_scalar_outputs` or `fullgraph=True`: an unbacked symbol while tracing,
the tensor's value at run time. A decision on such a value is a data-dependent break."""

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounterWithBackend


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def scale_by_item(x, y):
    n = y.item()
    return x * n + 1, n


def branch_on_item(x, y):
    if y.sum().item() > 0:
        return x + 1
    return x - 1


def methods_in_graph(counter):
    return [[node.target for node in gm.graph.nodes if node.op == "call_method"] for gm in counter.graphs]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_item_stays_in_the_graph_under_fullgraph(backend):
    counter = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(scale_by_item, backend=counter, fullgraph=True)
    x = torch.randn(3)
    for value in (2.5, -1.0, 0.0, 7.25):  # each value from the same graph: no recompile
        y = torch.tensor(value)
        out, n = compiled(x, y)
        expected, expected_n = scale_by_item(x, y)
        torch.testing.assert_close(out, expected)
        assert n == expected_n and type(n) is float
    assert counter.frame_count == 1
    assert methods_in_graph(counter) == [["item"]]


def test_integer_item_sizes_an_op():
    def f(x, n):
        k = n.item()
        return torch.ones(k) * x.sum(), k

    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.randn(4)
    for k in (3, 5):
        out, got = compiled(x, torch.tensor(k))
        expected, _ = f(x, torch.tensor(k))
        torch.testing.assert_close(out, expected)
        assert got == k and type(got) is int
    assert counter.frame_count == 1


def test_off_by_default_without_fullgraph_the_read_is_a_break():
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(scale_by_item, backend=counter)
    x, y = torch.randn(3), torch.tensor(2.0)
    torch.testing.assert_close(compiled(x, y), scale_by_item(x, y))
    assert all("item" not in methods for methods in methods_in_graph(counter))
    explained = bytegraph.explain(scale_by_item)(x, y)
    assert [reason.kind for reason in explained.break_reasons] == ["data_dependent_op"]


def test_the_setting_keeps_it_in_the_graph_and_breaks_at_a_decision():
    counter = CompileCounterWithBackend("eager")
    with bytegraph.config.patch(capture_scalar_outputs=True):
        compiled = bytegraph.compile(branch_on_item, backend=counter)
        x = torch.randn(3)
        for y in (torch.ones(2), -torch.ones(2)):
            torch.testing.assert_close(compiled(x, y), branch_on_item(x, y))
        explained = bytegraph.explain(branch_on_item)(x, torch.ones(2))
    # The first graph reads the scalar and compares; the branch's arm is a graph of its own.
    assert methods_in_graph(counter)[0] == ["sum", "item"]
    assert [reason.kind for reason in explained.break_reasons] == ["data_dependent_branch"]
    assert "read from tensor data" in explained.break_reasons[0].reason


def test_a_decision_on_it_under_fullgraph_is_a_clear_error():
    compiled = bytegraph.compile(branch_on_item, backend="eager", fullgraph=True)
    with pytest.raises(bytegraph.exc.GraphBreakError) as info:
        compiled(torch.randn(3), torch.ones(2))
    message = str(info.value)
    assert "data_dependent_branch" in message and "branch_on_item" in message
    assert "torch.where" in message  # the hint


def test_tolist_is_a_list_of_scalars_read_in_the_graph():
    def f(x):
        return [v * 2 for v in x.tolist()], x.sum()

    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.arange(6.0).reshape(2, 3)
    assert compiled(x)[0] == f(x)[0]
    x2 = torch.randn(2, 3)  # same shape, other values: the same graph
    assert compiled(x2)[0] == f(x2)[0]
    assert counter.frame_count == 1
    assert methods_in_graph(counter)[0].count("item") == 6


@pytest.mark.parametrize("cast, value", [(float, 1.0), (float, 3), (int, 4), (int, False)])
def test_int_and_float_of_a_one_element_tensor(cast, value):
    def f(x):
        return cast(x + 1)

    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True, dynamic=False)
    for v in (value, (not value) if isinstance(value, bool) else value + 2):  # same dtype
        x = torch.tensor([v])
        got, expected = compiled(x), f(x)
        assert got == expected and type(got) is type(expected)
    assert counter.frame_count == 1
    assert methods_in_graph(counter) == [["item"]]
