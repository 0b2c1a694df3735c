"""A graph op that fails only when it runs (fake tensors cannot see an index out of range or
a singular matrix): generated code runs the frame's original code instead, so the error is
raised (or caught) where the program has the op, after the side effects before it. Graphs
whose partial run would leave a trace (in-place writes into inputs, random numbers) keep the
error as it comes from the graph."""

import logging
import traceback

import pytest
import torch

import bytegraph
from bytegraph import _C, _frame, _graph_failure
from bytegraph.testing import CompileCounter, same
from tests._capture import compiled_with_counter

LOG = []


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


@pytest.fixture(autouse=True)
def _empty_log():
    LOG.clear()


def generated_codes(fn):
    return [entry["code"] for entry in _frame.cache_entries(fn.__code__)]


def has_fallback(code):
    return _graph_failure.FAILURE_LOCAL in code.co_varnames


OUT_OF_RANGE = torch.tensor([30])


def test_an_index_out_of_range_inside_try_is_caught_by_the_programs_handler():
    def f(a):
        b = a * 2
        try:
            b = b[OUT_OF_RANGE] + 1
        except IndexError:
            LOG.append("caught")
        return b + 1

    x = torch.randn(3, 4)
    expected = f(x)
    assert LOG == ["caught"]
    LOG.clear()
    cf, counter = compiled_with_counter(f)
    for _ in range(2):
        assert same(cf(x), expected)
    assert LOG == ["caught", "caught"]
    assert counter.frame_count == 1 and counter.op_count >= 3  # the try block was captured
    [code] = generated_codes(f)
    assert has_fallback(code)
    big = torch.randn(40, 4)  # in range: the compiled graph's result
    assert same(cf(big), f(big))
    assert LOG == ["caught", "caught"]


def test_side_effects_before_the_failing_op_happen_once_and_the_error_points_at_its_line():
    def f(a):
        LOG.append(len(LOG))
        b = a * 2
        return b[OUT_OF_RANGE] + 1  # fails

    cf, counter = compiled_with_counter(f)
    with pytest.raises(IndexError, match="out of bounds") as raised:
        cf(torch.randn(3, 4))
    assert LOG == [0]
    assert counter.frame_count == 1
    innermost = traceback.extract_tb(raised.value.__traceback__)[-1]
    assert innermost.name == "f" and "# fails" in innermost.line


def test_a_singular_matrix_inside_try_after_a_graph_break():
    def f(a):
        b = a @ a.T
        print("between graphs")  # a graph break: the second graph is a resume function's
        try:
            c = torch.linalg.inv(b)
        except torch.linalg.LinAlgError:
            LOG.append("singular")
            c = b
        return c.sum()

    singular = torch.ones(2, 2)
    expected = f(singular)
    LOG.clear()
    cf, counter = compiled_with_counter(f)
    assert same(cf(singular), expected)
    assert LOG == ["singular"]
    assert counter.frame_count == 2


def test_the_failure_is_logged_once_with_the_users_file_and_line(caplog):
    def f(a):
        try:
            return a[OUT_OF_RANGE] * 2
        except IndexError:
            return a * 0

    cf = bytegraph.compile(f, backend="eager")
    with caplog.at_level(logging.INFO, logger="bytegraph"):
        for _ in range(3):
            assert same(cf(torch.ones(2)), torch.zeros(2))
    messages = [r.getMessage() for r in caplog.records if "runs uncompiled" in r.getMessage()]
    assert len(messages) == 1
    assert f"{__file__}:{f.__code__.co_firstlineno}" in messages[0] and "IndexError" in messages[0]


def test_a_graph_writing_into_its_input_keeps_its_own_error():
    def f(a):
        a.mul_(2)  # ran once by the graph before the failing op: running again would double it
        return a[OUT_OF_RANGE]

    x = torch.ones(2)
    cf = bytegraph.compile(f, backend="eager")
    with pytest.raises(IndexError):
        cf(x)
    assert same(x, torch.full((2,), 2.0))  # written once
    [code] = generated_codes(f)
    assert not has_fallback(code)


def test_a_write_into_an_input_before_a_try_block_is_kept_out_of_the_blocks_graph():
    def f(a):
        a.mul_(2)
        try:
            return a[OUT_OF_RANGE]
        except IndexError:
            LOG.append("caught")
            return a

    x = torch.ones(2)
    cf, counter = compiled_with_counter(f)
    assert same(cf(x), torch.full((2,), 2.0))
    assert same(x, torch.full((2,), 2.0)) and LOG == ["caught"]
    # The write's graph ends at the try block; the failing op runs at the break.
    assert counter.frame_count == 1 and counter.op_count == 1
    explained = bytegraph.explain(f)(torch.ones(2))
    assert explained.break_reasons[0].kind == "lasting_op_in_try"


def test_writes_into_tensors_the_graph_made_do_not_stop_the_fallback():
    def f(a):
        b = a + 1
        b.mul_(2)
        try:
            return b[OUT_OF_RANGE]
        except IndexError:
            return b

    cf = bytegraph.compile(f, backend="eager")
    assert same(cf(torch.ones(2)), torch.full((2,), 4.0))
    [code] = generated_codes(f)
    assert has_fallback(code)


def test_a_graph_drawing_random_numbers_falls_back_with_the_generator_put_back():
    def f(a):
        noise = torch.rand(2)
        try:
            return a[OUT_OF_RANGE] + noise
        except IndexError:
            return noise * 2

    torch.manual_seed(0)
    expected = f(torch.ones(2))
    after_eager = torch.rand(3)
    cf, counter = compiled_with_counter(f)
    torch.manual_seed(0)
    assert same(cf(torch.ones(2)), expected)  # the handler ran, on the numbers eager drew
    assert same(torch.rand(3), after_eager)  # and the generator advanced once
    assert counter.frame_count == 1 and counter.op_count == 3  # rand, getitem, add
    [code] = generated_codes(f)
    assert has_fallback(code)


def test_dropout_that_cannot_draw_needs_no_generator_state():
    import torch.nn.functional as F

    def f(q, a):
        b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.0)
        return F.dropout(b, 0.5, training=False) + torch.dropout(a, 0.5, False)

    gm = torch.fx.symbolic_trace(f)
    compiled = gm.forward
    assert _graph_failure._generators_drawn_from(gm) == []
    assert _graph_failure.restoring_on_failure(gm, compiled) is compiled
    assert _graph_failure.draws_random_numbers(F.dropout, (q := torch.ones(2), 0.5), {})
    assert _graph_failure.draws_random_numbers(F.scaled_dot_product_attention, (q, q, q), {"dropout_p": 0.1})


def test_an_interrupt_from_the_graph_is_not_run_again():
    calls = []

    def interrupted(gm, example_inputs):
        def run(*args):
            calls.append(1)
            raise KeyboardInterrupt

        return run

    def f(a):
        LOG.append("ran")
        return a + 1

    cf = bytegraph.compile(f, backend=interrupted)
    with pytest.raises(KeyboardInterrupt):
        cf(torch.ones(2))
    assert calls == [1] and LOG == []


def test_generated_code_is_shown_without_the_fallback_and_says_so():
    from bytegraph import _readable_code

    def f(a):
        return (a * 2).sum()

    bytegraph.compile(f, backend="eager")(torch.ones(2))
    [code] = generated_codes(f)
    assert has_fallback(code)
    text, is_source = _readable_code.python_source(code)
    if is_source:
        assert "original code runs uncompiled" in text
        assert _graph_failure.FAILURE_LOCAL not in text


def test_an_in_place_write_into_an_input_inside_try_is_kept_out_of_the_graphs_around_it():
    def f(a, b):
        c = a * 2
        try:
            b.add_(1)  # written once, then the next op fails: the handler sees b written once
            c = c + b[OUT_OF_RANGE]
        except IndexError:
            LOG.append("caught")
        return c + b

    def inputs():
        return torch.ones(3), torch.zeros(3)

    a, b = inputs()
    expected = f(a, b)
    LOG.clear()
    cf, counter = compiled_with_counter(f)
    a2, b2 = inputs()
    assert same(cf(a2, b2), expected)
    assert same(b2, b) and LOG == ["caught"]
    assert counter.frame_count == 2  # split at the write: the graphs around it can run again
    explained = bytegraph.explain(f)(*inputs())
    assert [r.kind for r in explained.break_reasons] == ["lasting_op_in_try"]


def test_in_place_writes_under_no_grad_or_into_own_tensors_stay_in_one_graph():
    def f(a, b):
        with torch.no_grad():
            b.mul_(2)  # a with block's exit is not a handler of the program
        try:
            c = a + 1
            c.add_(b)  # the graph's own tensor
        except IndexError:
            c = a
        return c

    cf, counter = compiled_with_counter(f)
    b = torch.ones(2)
    assert same(cf(torch.ones(2), b), torch.full((2,), 4.0))
    assert counter.frame_count == 1


def test_an_input_whose_autograd_metadata_raises_when_read_runs_eagerly():
    def f(a, b):
        return b * 2 + a.sum()  # reading a raises, as it does eagerly

    base = torch.randn(2, 3, requires_grad=True).clone()
    with torch.no_grad():
        view = base.split(1)[0]  # a view of a multi-output op, made without grad...
    base.mul_(2)  # ...whose base is then written with grad: reading the view raises
    with pytest.raises(RuntimeError, match="view"):
        f(view, torch.ones(2))
    cf, counter = compiled_with_counter(f)
    assert same(cf(torch.ones(1, 3), torch.ones(2)), torch.full((2,), 5.0))
    with pytest.raises(RuntimeError, match="view"):
        cf(view, torch.ones(2))
    assert same(cf(torch.ones(1, 3), torch.ones(2)), torch.full((2,), 5.0))
    assert counter.frame_count == 1


def test_a_first_call_whose_input_cannot_be_read_leaves_later_calls_compiled():
    def f(a, b):
        return b * 2 + a.sum()

    base = torch.randn(2, 3, requires_grad=True).clone()
    with torch.no_grad():
        view = base.split(1)[0]
    base.mul_(2)  # reading the view's autograd metadata now raises
    cf, counter = compiled_with_counter(f)
    with pytest.raises(RuntimeError, match="view"):
        cf(view, torch.ones(2))  # runs eagerly, which raises
    assert counter.frame_count == 0
    assert same(cf(torch.ones(1, 3), torch.ones(2)), torch.full((2,), 5.0))
    assert counter.frame_count == 1  # offered again, and captured


def test_a_frame_whose_inputs_never_can_be_read_stops_being_traced():
    def f(a):
        return a * 2

    base = torch.randn(2, 3, requires_grad=True).clone()
    with torch.no_grad():
        view = base.split(1)[0]
    base.mul_(2)
    cf, counter = compiled_with_counter(f)
    traced = []
    original = _C.trace.trace_frame

    def counting(*args, **kwargs):
        traced.append(1)
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_C.trace, "trace_frame", counting)
        for _ in range(3 * bytegraph.config.cache_size_limit):
            with pytest.raises(RuntimeError, match="view"):
                cf(view)
    assert len(traced) == bytegraph.config.cache_size_limit and counter.frame_count == 0


def test_torch_sort_does_not_count_as_a_write():
    # aten.sort's overloads include an in-place sort of Python lists: no tensor is written.
    def f(a):
        values = torch.sort(a, dim=-1)[0]
        try:
            return values[OUT_OF_RANGE]
        except IndexError:
            return values

    cf = bytegraph.compile(f, backend="eager")
    x = torch.tensor([3.0, 1.0, 2.0])
    assert same(cf(x), torch.tensor([1.0, 2.0, 3.0]))
    [code] = generated_codes(f)
    assert has_fallback(code)


def test_size_arithmetic_inside_try_after_a_write_keeps_one_graph():
    # Arithmetic on symbolic ints is computed while tracing: it cannot fail when the graph
    # runs, so it does not count as an op the handler covers (3.13 once broke there and failed).
    def f(a, b, n):
        b.add_(1)
        try:
            k = n % 3
        except ZeroDivisionError:
            k = 0
        return a * k + b

    cf, counter = compiled_with_counter(f)
    cf_dynamic = bytegraph.compile(f, backend=counter, dynamic=True)
    for n in (4, 5):
        b, b2 = torch.ones(2), torch.ones(2)
        assert same(cf_dynamic(torch.ones(2), b2, n), f(torch.ones(2), b, n)) and same(b, b2)
    assert counter.frame_count == 1
    explained = bytegraph.explain(f)(torch.ones(2), torch.ones(2), 4)
    assert explained.break_reasons == []
    del cf


def test_an_inplace_argument_counts_as_a_write_into_the_input():
    # F.leaky_relu(a, 0.1, True) writes into a: run again after a failure it would be applied
    # twice, so the graph gets no fallback and its error propagates with a written once.
    def f(a):
        torch.nn.functional.leaky_relu(a, 0.1, True)
        return a[OUT_OF_RANGE]

    def g(a):
        torch.nn.functional.leaky_relu(a, negative_slope=0.1, inplace=True)
        return a[OUT_OF_RANGE]

    for fn in (f, g):
        x = -torch.ones(2)
        with pytest.raises(IndexError):
            bytegraph.compile(fn, backend="eager")(x)
        assert same(x, torch.full((2,), -0.1))  # written once
        [code] = generated_codes(fn)
        assert not has_fallback(code)


def break_kind(fn, *args):
    """The kind of the first graph break tracing fn(*args) meets (the trace runs nothing)."""
    return _C.trace.trace(fn, args, allow_graph_break=True).graph_break["kind"]


def _raises_like_eager(fn, make_inputs, error):
    """Runs fn eagerly then compiled on fresh inputs: the same error, the same LOG, the same
    inputs after; returns the compile counter."""
    eager_inputs = make_inputs()
    with pytest.raises(error):
        fn(*eager_inputs)
    eager_log = list(LOG)
    LOG.clear()
    cf, counter = compiled_with_counter(fn)
    compiled_inputs = make_inputs()
    with pytest.raises(error):
        cf(*compiled_inputs)
    assert LOG == eager_log
    assert all(same(a, b) for a, b in zip(compiled_inputs, eager_inputs))
    return counter


def test_a_side_effect_before_a_write_into_an_input_is_made_when_a_later_op_fails():
    def f(a):
        LOG.append("before")
        a.mul_(2)
        return a[OUT_OF_RANGE]

    counter = _raises_like_eager(f, lambda: (torch.ones(2),), IndexError)
    # Nothing before the break is a graph; the write runs at the break; the resume's graph fails.
    assert counter.frame_count == 1 and counter.op_count == 1
    assert break_kind(f, torch.ones(2)) == "lasting_op_after_side_effect"


def test_a_side_effect_after_a_write_into_an_input_is_made_when_a_later_op_fails():
    def f(a, b):
        a.mul_(2)
        b = b + a
        LOG.append("between")
        return b[OUT_OF_RANGE]

    counter = _raises_like_eager(f, lambda: (torch.ones(2), torch.ones(2)), IndexError)
    assert counter.frame_count == 1 and counter.op_count == 2  # mul_, add; the failing op runs at the break
    assert break_kind(f, torch.ones(2), torch.ones(2)) == "lasting_op_after_side_effect"


def test_a_side_effect_before_random_numbers_is_made_when_a_later_op_fails():
    def f(a):
        LOG.append("before")
        noise = torch.rand(2)
        return a[OUT_OF_RANGE] + noise

    torch.manual_seed(0)
    counter = _raises_like_eager(f, lambda: (torch.ones(2),), IndexError)
    assert counter.frame_count == 1 and counter.op_count == 3  # one graph: it falls back


def test_side_effects_after_every_tensor_op_keep_one_graph():
    def f(a, box):
        a.mul_(2)
        b = torch.rand(2) + a
        box.value = b.shape[0]  # after the last tensor op: made after the graph, as before
        LOG.append("after")
        return b

    class Box:
        value = None

    cf, counter = compiled_with_counter(f)
    x, box = torch.ones(2), Box()
    assert cf(x, box).shape == (2,)
    assert same(x, torch.full((2,), 2.0)) and box.value == 2 and LOG == ["after"]
    assert counter.frame_count == 1 and counter.op_count == 3


def test_fullgraph_keeps_a_side_effect_and_a_write_into_an_input_in_one_graph():
    # torch.compile(fullgraph=True) captures this in one graph: so does bytegraph.
    def f(a):
        LOG.append("before")
        a.mul_(2)
        return a + 1

    counter = CompileCounter()
    x = torch.ones(2)
    assert same(bytegraph.compile(f, backend=counter, fullgraph=True)(x), torch.full((2,), 3.0))
    assert same(x, torch.full((2,), 2.0)) and LOG == ["before"]
    assert counter.frame_count == 1 and counter.op_count == 2


def test_a_view_whose_base_was_written_with_grad_makes_its_resume_function_run_eagerly(caplog):
    # torch's fake tensors cannot copy the view (its requires_grad changed with its base's).
    def f(a, w, box):
        box.calls += 1
        view = a[-1]
        a *= w  # after the side effect: the trace breaks here, and the view is passed on
        return view * 2

    class Box:
        calls = 0

    def inputs():
        return torch.ones(2, 3), torch.full((3,), 2.0, requires_grad=True), Box()

    a, w, box = inputs()
    expected = f(a, w, box)
    cf, counter = compiled_with_counter(f)
    a2, w2, box2 = inputs()
    with caplog.at_level(logging.INFO, logger="bytegraph.graph_breaks"):
        result = cf(a2, w2, box2)
    assert same(result, expected) and same(a2, a) and box2.calls == 1
    assert result.requires_grad
    assert counter.frame_count == 1 and counter.op_count == 1  # the view; the resume function runs eagerly
    assert any("(unfakeable_tensor): L['view']" in r.getMessage() for r in caplog.records)
    assert break_kind(f, *inputs()) == "lasting_op_after_side_effect"


def test_batch_norm_in_eval_mode_writes_nothing_so_side_effects_keep_one_graph():
    # A leaf module counts as lasting only where running it twice would show: batch norm
    # updates its statistics in training, and reads them in eval (LeViT's eval forward).
    norm = torch.nn.BatchNorm1d(3)

    def f(x):
        LOG.append("before")
        return norm(x) + 1

    norm.eval()
    cf, counter = compiled_with_counter(f)
    x = torch.randn(4, 3)
    assert same(cf(x), f(x))
    assert counter.frame_count == 1 and counter.op_count == 2
    norm.train()
    assert break_kind(f, x) == "lasting_op_after_side_effect"


def test_a_graph_failing_inside_no_grad_leaves_the_grad_mode_as_eager_does():
    def inner(a, caught):
        with torch.no_grad():
            if caught:
                try:
                    a[OUT_OF_RANGE] + 1
                except IndexError:
                    LOG.append("caught")
            else:
                a.add_(1)  # written: this graph cannot run again, its error propagates
                a[OUT_OF_RANGE] + 1
        return torch.is_grad_enabled()

    for caught in (True, False):
        cf, counter = compiled_with_counter(inner)
        if caught:
            assert cf(torch.ones(3), caught) is True
            assert LOG == ["caught"]
        else:
            with pytest.raises(IndexError):
                cf(torch.ones(3), caught)
        assert torch.is_grad_enabled()
        assert counter.frame_count == 1
        bytegraph.reset()
