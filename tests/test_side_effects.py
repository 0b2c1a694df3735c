"""Side effects on objects that outlive the frame are traced and written back after the graph
runs, in one graph: lists, dicts, object attributes, globals. Each test runs compiled with
config.verify_correctness on (the original runs eagerly beside it on copies of the arguments
and any difference in results or in what happened to the arguments raises) and asserts the
graph count."""

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter


@pytest.fixture(autouse=True)
def verified():
    bytegraph.reset()
    with bytegraph.config.patch(verify_correctness=True):
        yield
    bytegraph.reset()


def compiled_with_counter(fn):
    counter = CompileCounter()
    return bytegraph.compile(fn, backend=counter), counter


# ---- lists and dicts passed in -------------------------------------------------------------


def test_list_methods_on_an_input_list_are_written_back():
    def f(xs, x):
        xs.append(x * 2)
        xs.insert(0, x + 1)
        last = xs.pop()
        xs.extend([x, x])
        xs[1] = x - 1
        xs += [x * 3]
        return last, len(xs)

    cf, counter = compiled_with_counter(f)
    xs = [torch.zeros(2)]
    last, length = cf(xs, torch.ones(2))
    assert length == 5 and len(xs) == 5
    torch.testing.assert_close(last, torch.full((2,), 2.0))
    torch.testing.assert_close(xs[0], torch.full((2,), 2.0))
    torch.testing.assert_close(xs[-1], torch.full((2,), 3.0))
    assert counter.frame_count == 1


def test_dict_updates_on_an_input_dict_are_written_back_in_order():
    def f(d, x):
        d["new"] = x * 2
        d.update({"a": 5})
        d["b"] = d["b"] + x
        return d["new"].sum()

    cf, counter = compiled_with_counter(f)
    d = {"a": 1, "b": torch.ones(2)}
    cf(d, torch.ones(2))
    assert list(d) == ["a", "b", "new"] and d["a"] == 5
    torch.testing.assert_close(d["b"], torch.full((2,), 2.0))
    assert counter.frame_count == 1


def test_one_list_reached_through_two_names_stays_one_object():
    def f(holder, xs, x):
        holder["items"].append(x * 2)
        return len(xs)

    cf, counter = compiled_with_counter(f)
    xs = []
    holder = {"items": xs}
    assert cf(holder, xs, torch.ones(1)) == 1 and len(xs) == 1
    # Two different lists now: the trace that treated them as one must not be reused.
    ys = []
    assert cf({"items": []}, ys, torch.ones(1)) == 0 and ys == []
    assert counter.frame_count == 2


def test_a_value_read_before_the_change_is_the_old_one():
    def f(xs, x):
        first = xs[0]
        xs[0] = x
        return first + 1, xs

    cf, counter = compiled_with_counter(f)
    old = torch.zeros(2)
    xs = [old]
    first, returned = cf(xs, torch.ones(2))
    assert returned is xs and xs[0] is not old
    torch.testing.assert_close(first, torch.ones(2))


def test_changes_before_a_graph_break_are_written_before_the_rest_runs():
    def f(xs, x):
        xs.append(x)
        y = x * 2
        bytegraph.graph_break()
        xs.append(y)
        return len(xs)

    cf, counter = compiled_with_counter(f)
    xs = []
    assert cf(xs, torch.ones(1)) == 2
    torch.testing.assert_close(xs[1], torch.full((1,), 2.0))
    assert counter.frame_count == 1  # the resumed part has no tensor ops


def test_a_change_inside_an_instruction_that_breaks_is_undone():
    def f(xs, x):
        xs.append(x)
        xs.append(x.sum().item())  # a break: rolled back, then run for real
        return len(xs)

    cf, counter = compiled_with_counter(f)
    xs = []
    assert cf(xs, torch.ones(2)) == 2 and xs[1] == 2.0
