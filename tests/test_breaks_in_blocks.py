"""Graph breaks inside try blocks and with statements: the frame is split there like anywhere
else; if the breaking instruction raises, the original handler runs (in a resume function of
its own), so exceptions, finally blocks and context exits behave as in eager."""

import contextlib

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def compiled_with_counter(fn):
    counter = CompileCounter()
    return bytegraph.compile(fn, backend=counter), counter


def test_a_break_inside_a_try_block_splits_the_frame():
    def f(x):
        y = x * 2
        try:
            bytegraph.graph_break()
            y = y + 1
        except ValueError:
            y = y - 1
        return y * 3

    cf, counter = compiled_with_counter(f)
    x = torch.ones(2)
    torch.testing.assert_close(cf(x), f(x))
    assert counter.frame_count == 2  # before the break, and the rest


def _maybe_raise(t, flag):
    if flag:
        raise ValueError("bad")
    return t


# Run eagerly wherever it is called from: a call the trace breaks at.
_maybe_raise_opaque = torch.compiler.disable(_maybe_raise)


def test_the_handler_runs_when_the_breaking_call_raises():
    def f(x, flag):
        y = x * 2
        try:
            y = _maybe_raise_opaque(y, flag)
            y = y + 1
        except ValueError:
            y = y - 10
        finally:
            y = y * 3
        return y

    for flag in (False, True):
        bytegraph.reset()
        cf, counter = compiled_with_counter(f)
        x = torch.ones(2)
        torch.testing.assert_close(cf(x, flag), f(x, flag))
        assert counter.frame_count >= 1


def test_an_exception_nobody_handles_propagates_through_finally():
    log = []

    def f(x):
        try:
            return _maybe_raise_opaque(x * 2, True)
        finally:
            log.append("finally")

    cf, counter = compiled_with_counter(f)
    with pytest.raises(ValueError, match="bad"):
        cf(torch.ones(2))
    assert log == ["finally"]
    assert counter.frame_count == 1


class Recorder:
    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, *exc):
        self.events.append("exit" if exc[0] is None else "exit " + exc[0].__name__)
        return False


def test_a_break_inside_a_with_statement_keeps_the_context_open_around_the_rest():
    recorder = Recorder()

    def f(x, rec):
        with rec:
            y = x + 1
            bytegraph.graph_break()
            y = y * 2
        return y

    cf, counter = compiled_with_counter(f)
    torch.testing.assert_close(cf(torch.ones(2), recorder), torch.full((2,), 4.0))
    assert recorder.events == ["enter", "exit"]
    assert counter.frame_count >= 2


def test_an_exception_inside_a_split_with_statement_reaches_exit():
    recorder = Recorder()

    def f(x, rec):
        with rec:
            y = x + 1
            _maybe_raise_opaque(y, True)
        return y

    cf, counter = compiled_with_counter(f)
    with pytest.raises(ValueError):
        cf(torch.ones(2), recorder)
    assert recorder.events == ["enter", "exit ValueError"]


def test_nullcontext_and_suppress():
    def f(x):
        with contextlib.nullcontext():
            y = x + 1
        with contextlib.suppress(KeyError):
            y = y * 2
            bytegraph.graph_break()
            y = y + 3
        return y

    cf, counter = compiled_with_counter(f)
    torch.testing.assert_close(cf(torch.ones(2)), f(torch.ones(2)))


def test_a_break_at_a_method_load_splits_the_frame():
    class Box:
        def __init__(self, t):
            self.t = t

        def scaled(self, k):
            return self.t * k

    def f(box, x):
        y = x + 1
        # An attribute the trace breaks on while loading it as a method.
        return box.scaled(2) + y

    cf, counter = compiled_with_counter(f)
    box = Box(torch.ones(2))
    torch.testing.assert_close(cf(box, torch.ones(2)), f(box, torch.ones(2)))


def test_inside_a_loop_of_a_try_block():
    def f(xs):
        total = xs[0] * 0
        for x in xs:
            try:
                total = total + x
                bytegraph.graph_break()
            except RuntimeError:
                pass
        return total

    cf, counter = compiled_with_counter(f)
    xs = [torch.ones(2), torch.full((2,), 2.0)]
    torch.testing.assert_close(cf(xs), f(xs))
