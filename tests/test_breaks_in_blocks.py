"""Graph breaks inside try blocks and with statements: the frame is split there like anywhere
else; if the breaking instruction raises, the original handler runs (in a resume function of
its own), so exceptions, finally blocks and context exits behave as in eager."""

import contextlib

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from tests._capture import compiled_with_counter
from tests._trace_helpers import GradSwitch


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


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


# ---- blocks whose context is made again at a break inside them ---------------------------------

_hooks_message = torch._C._autograd._saved_tensors_hooks_get_disabled_error_message


@torch.compiler.disable
def _seen_state(log):
    """Runs eagerly (a break): what the breaking instruction sees."""
    log.append((_hooks_message(), torch._C._get_math_sdp_enabled(), torch._C._get_flash_sdp_enabled()))


def _graph_targets(counter):
    return [[getattr(n.target, "__name__", str(n.target)) for n in gm.graph.nodes if n.op == "call_function"]
            for gm in counter.graphs]


class _GraphsCounter(CompileCounter):
    def __init__(self):
        super().__init__()
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return super().__call__(gm, example_inputs)


def test_a_break_inside_a_contextmanager_block_enters_it_again():
    def f(x, log):
        with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            y = x + 1
            _seen_state(log)
            return y * 2

    counter = _GraphsCounter()
    cf = bytegraph.compile(f, backend=counter)
    for _ in range(2):
        eager_log, compiled_log = [], []
        torch.testing.assert_close(cf(torch.ones(2), compiled_log), f(torch.ones(2), eager_log))
        assert _hooks_message() is None
        assert compiled_log == eager_log == [("no hooks here", True, True)]
    # Before the break and after it, each graph entering and leaving the block itself.
    assert _graph_targets(counter) == [
        ["_saved_tensors_hooks_disable", "add", "_saved_tensors_hooks_enable"],
        ["_saved_tensors_hooks_disable", "mul", "_saved_tensors_hooks_enable"],
    ]
    assert counter.frame_count == 2  # no recompile on the second call


def test_the_state_outside_a_re_entered_block_is_guarded_and_put_back():
    def f(x, log):
        with torch.autograd.graph.disable_saved_tensors_hooks("inner"):
            y = x + 1
            _seen_state(log)
            return y * 2

    cf, counter = compiled_with_counter(f)
    eager_log, compiled_log = [], []
    torch.testing.assert_close(cf(torch.ones(2), compiled_log), f(torch.ones(2), eager_log))
    assert counter.frame_count == 2
    # Called from inside another disabled block: the graphs put back "outer", not enabled hooks.
    with torch.autograd.graph.disable_saved_tensors_hooks("outer"):
        torch.testing.assert_close(cf(torch.ones(2), compiled_log), f(torch.ones(2), eager_log))
        assert _hooks_message() == "outer"
    assert compiled_log == eager_log == [("inner", True, True)] * 2
    assert counter.frame_count == 4  # the global-state guard saw the other outside state
    assert _hooks_message() is None


def test_nested_state_blocks_are_entered_again_in_order():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def f(x, log):
        with torch.autograd.graph.disable_saved_tensors_hooks("outer"):
            with sdpa_kernel([SDPBackend.MATH]):
                y = x.sin()
                _seen_state(log)
                y = y.cos()
            _seen_state(log)
        _seen_state(log)
        return y

    cf, counter = compiled_with_counter(f)
    eager_log, compiled_log = [], []
    torch.testing.assert_close(cf(torch.ones(2), compiled_log), f(torch.ones(2), eager_log))
    assert compiled_log == eager_log
    assert eager_log[0] == ("outer", True, False)
    assert (_hooks_message(), torch._C._get_flash_sdp_enabled()) == (None, True)
    assert counter.frame_count >= 2


@contextlib.contextmanager
def _hooks_off(message="off", swallowing=()):
    """Saved-tensors hooks disabled inside; exceptions of the `swallowing` classes suppressed."""
    torch._C._autograd._saved_tensors_hooks_disable(message)
    try:
        yield
    except swallowing:
        pass
    finally:
        torch._C._autograd._saved_tensors_hooks_enable()


def test_the_block_exits_with_the_exception_the_breaking_call_raises():
    def f(x, flag):
        y = x * 2
        with _hooks_off(swallowing=ValueError):
            y = y + 1
            y = _maybe_raise_opaque(y, flag)
            y = y * 10
        return y - 1

    cf, counter = compiled_with_counter(f)
    for flag in (False, True):
        torch.testing.assert_close(cf(torch.ones(2), flag), f(torch.ones(2), flag))
        assert _hooks_message() is None
    assert counter.frame_count >= 2

    def g(x):
        with _hooks_off(swallowing=KeyError):
            return _maybe_raise_opaque(x + 1, True)

    with pytest.raises(ValueError):
        bytegraph.compile(g, backend=CompileCounter())(torch.ones(2))
    assert _hooks_message() is None


def test_a_block_whose_enter_changes_outside_state_is_not_entered_twice():
    entered = []

    @contextlib.contextmanager
    def noting():
        entered.append(1)
        torch._C._autograd._saved_tensors_hooks_disable("noting")
        try:
            yield
        finally:
            torch._C._autograd._saved_tensors_hooks_enable()

    def f(x, log):
        with noting():
            y = x + 1
            _seen_state(log)
        return y

    cf, counter = compiled_with_counter(f)
    log = []
    torch.testing.assert_close(cf(torch.ones(2), log), torch.full((2,), 2.0))
    assert entered == [1] and log == [("noting", True, True)]
    assert _hooks_message() is None
    assert counter.frame_count == 0  # the frame ran as it is: its block cannot be entered twice


def test_state_switched_inside_the_block_before_the_break_is_kept():
    def f(x, log):
        with _hooks_off():
            torch._C._autograd._saved_tensors_hooks_disable("changed inside")
            y = x + 1
            _seen_state(log)
        return y

    cf, counter = compiled_with_counter(f)
    eager_log, compiled_log = [], []
    torch.testing.assert_close(cf(torch.ones(2), compiled_log), f(torch.ones(2), eager_log))
    assert compiled_log == eager_log == [("changed inside", True, True)]
    assert _hooks_message() is None
    assert counter.frame_count == 0  # entering the block again would not make that state


def test_a_class_context_made_in_the_frame_is_made_again():
    @torch.compiler.disable
    def seen_grad(log):
        log.append(torch.is_grad_enabled())

    def f(x, log):
        with GradSwitch(False):
            y = x * 2
            seen_grad(log)
            y = y + 1
        return y

    cf, counter = compiled_with_counter(f)
    x = torch.ones(2, requires_grad=True)
    eager_log, compiled_log = [], []
    expected, got = f(x, eager_log), cf(x, compiled_log)
    torch.testing.assert_close(got, expected)
    assert got.requires_grad == expected.requires_grad is False
    assert compiled_log == eager_log == [False]
    assert torch.is_grad_enabled()
    assert counter.frame_count == 2
