"""Side effects on objects that outlive the frame are traced and written back after the graph
runs, in one graph: lists, dicts, object attributes, globals. Each test runs compiled with
config.verify_correctness on (the original runs eagerly beside it on copies of the arguments
and any difference in results or in what happened to the arguments raises) and asserts the
graph count."""

import pytest
import torch

import bytegraph
from tests._capture import compiled_with_counter


# A fresh cache per test, each compiled call checked against eager (conftest.py).
pytestmark = pytest.mark.usefixtures("verified")


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


# ---- globals and closure variables ------------------------------------------------------------

STEP = 0
SCALE = 2.0


def test_a_global_assigned_in_the_trace_is_seen_after_and_written_back():
    def f(x):
        global STEP, SCALE
        STEP = STEP + 1
        SCALE = SCALE * 2
        return x * SCALE

    cf, counter = compiled_with_counter(f)
    try:
        with bytegraph.config.patch(verify_correctness=False):  # globals change twice under verification
            out = cf(torch.ones(2))
        torch.testing.assert_close(out, torch.full((2,), 4.0))
        assert STEP == 1 and SCALE == 4.0
        assert counter.frame_count == 1
    finally:
        globals().update(STEP=0, SCALE=2.0)


def test_deleting_a_global_raises_name_error_where_it_is_absent_and_recompiles_when_it_appears():
    def f(x):
        global _DELETED
        try:
            del _DELETED
        except NameError:
            return x - 1
        return x + 1

    cf, counter = compiled_with_counter(f)
    with bytegraph.config.patch(verify_correctness=False):  # the global is deleted once per call
        assert torch.equal(cf(torch.ones(2)), torch.zeros(2))
        assert torch.equal(cf(torch.ones(2)), torch.zeros(2))
        assert counter.frame_count == 1
        globals()["_DELETED"] = 3
        assert torch.equal(cf(torch.ones(2)), torch.full((2,), 2.0))
        assert "_DELETED" not in globals() and counter.frame_count == 2


def test_a_global_of_another_module_written_by_an_inlined_helper():
    import _trace_other_module as other

    def f(x):
        return other.bump(x)

    cf, counter = compiled_with_counter(f)
    saved = other.COUNT
    try:
        with bytegraph.config.patch(verify_correctness=False):
            torch.testing.assert_close(cf(torch.ones(2)), torch.full((2,), 2.0))
        assert other.COUNT == saved + 1
        assert counter.frame_count == 1
    finally:
        other.COUNT = saved


def test_a_module_attribute_reads_what_the_trace_wrote_to_that_module():
    import _trace_other_module as other

    def f(x):
        y = other.bump(x)  # writes other.COUNT as a global of its module
        other.SCALE = other.SCALE + 1  # writes the module's attribute
        return y * other.COUNT + other.SCALE

    cf, counter = compiled_with_counter(f)
    saved = other.COUNT, other.SCALE
    try:
        with bytegraph.config.patch(verify_correctness=False):
            out = cf(torch.ones(2))
        torch.testing.assert_close(out, torch.full((2,), 2.0 * (saved[0] + 1) + saved[1] + 1))
        assert (other.COUNT, other.SCALE) == (saved[0] + 1, saved[1] + 1)
        assert counter.frame_count == 1 and counter.op_count >= 2
    finally:
        other.COUNT, other.SCALE = saved


def test_deleting_a_module_attribute_then_reading_it_raises():
    import _trace_other_module as other

    def f(x):
        other.EXTRA = 1
        del other.EXTRA
        try:
            return x + other.EXTRA
        except AttributeError:
            return x - 1

    cf, counter = compiled_with_counter(f)
    torch.testing.assert_close(cf(torch.ones(2)), torch.zeros(2))
    assert not hasattr(other, "EXTRA")
    assert counter.frame_count == 1


def test_nonlocal_counters_are_written_back():
    count = 0
    seen = []

    def f(x):
        nonlocal count
        count += 1
        seen.append(count)
        return x + count

    cf, counter = compiled_with_counter(f)
    with bytegraph.config.patch(verify_correctness=False):
        torch.testing.assert_close(cf(torch.zeros(1)), torch.ones(1))
    assert count == 1 and seen == [1]
    assert counter.frame_count == 1


def test_a_closure_variable_of_an_inlined_function():
    def make():
        total = 0

        def add(x):
            nonlocal total
            total += 1
            return x * total

        def read():
            return total

        return add, read

    add, read = make()

    def f(x):
        return add(x)

    cf, counter = compiled_with_counter(f)
    with bytegraph.config.patch(verify_correctness=False):
        torch.testing.assert_close(cf(torch.ones(1)), torch.ones(1))
    assert read() == 1
