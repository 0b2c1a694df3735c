"""`with` blocks on user context managers and contextlib's helpers: __enter__ inlined, __exit__
called on the way out (with the exception when one leaves the block, which it may suppress).

Each case runs eagerly and compiled: the same result and effects, one graph where nothing
needs to run eagerly, and no recompile on the second call.
"""

import contextlib

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, CompileCounterWithBackend, same
from tests._trace_helpers import GradSwitch

X = torch.randn(3)


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


class Recorder:
    """A context manager that records its enters and exits on itself."""

    def __init__(self, suppress=False):
        self.events = []
        self.suppress = suppress

    def __enter__(self):
        self.events.append("enter")
        return len(self.events)

    def __exit__(self, kind, value, traceback):
        self.events.append("exit" if kind is None else f"exit {kind.__name__}")
        return self.suppress


def check(fn, *args, graphs=1, ops=None):
    expected = fn(*args)
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=graphs == 1)
    for _ in range(2):
        assert same(expected, compiled(*args))
    assert counter.frame_count == graphs
    if ops is not None:
        assert counter.op_count == ops


def test_a_user_context_manager_made_in_the_frame():
    def f(x):
        recorder = Recorder()
        with recorder as entered:
            x = x * entered
        return x + 1, recorder.events

    check(f, X, ops=2)


def test_a_context_manager_from_outside_has_its_changes_written_back():
    recorder = Recorder()

    def f(x):
        with recorder:
            x = x + 1
        return x

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    for _ in range(2):
        recorder.events = []  # a new list, empty as the traced one was (its length is guarded)
        assert same(compiled(X), X + 1)
        assert recorder.events == ["enter", "exit"]
    assert counter.frame_count == 1


def test_exit_sees_the_exception_and_may_suppress_it():
    def f(x, suppress):
        recorder = Recorder(suppress)
        try:
            with recorder:
                x = x + 1
                raise KeyError("k")
        except KeyError:
            x = x - 10
        return x, recorder.events

    check(f, X, True, ops=1)
    bytegraph.reset()
    check(f, X, False, ops=2)


def test_contextlib_helpers():
    @contextlib.contextmanager
    def scaled(factor):
        yield factor * 2

    def f(x):
        with contextlib.nullcontext(3) as three:
            x = x * three
        with scaled(2) as four:
            x = x + four
        with contextlib.suppress(KeyError):
            {}["missing"]
        return x

    check(f, X, ops=2)


def test_a_break_inside_a_user_with_block_keeps_enter_and_exit_paired():
    recorder = Recorder()

    def f(x):
        with recorder:
            x = x + 1
            torch._dynamo.graph_break()
            x = x * 2
        return x

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    for _ in range(2):
        recorder.events = []
        assert same(compiled(X), (X + 1) * 2)
        assert recorder.events == ["enter", "exit"]
    assert counter.frame_count == 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_grad_mode_set_by_set_grad_enabled_calls_holds_after_the_call(backend):
    def f(x):
        with GradSwitch(False):
            a = x * 2                       # no grad inside
        b = x * 3                           # grad again
        torch.set_grad_enabled(False)       # called as a function: the mode stays off
        c = x * 4
        return a, b, c

    counter = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.ones(2, requires_grad=True)
    for _ in range(2):
        torch.set_grad_enabled(True)
        expected = f(x)
        assert not torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        result = compiled(x)
        assert not torch.is_grad_enabled()  # left off, as the eager call leaves it
        torch.set_grad_enabled(True)
        assert same(result, expected)
        assert [t.requires_grad for t in result] == [t.requires_grad for t in expected] == [False, True, False]
    assert counter.frame_count == 1


@pytest.mark.parametrize("decorate", [
    lambda mode, fn: mode()(fn),                # torch.no_grad()(fn)
    lambda mode, fn: mode(fn),                  # torch.no_grad(fn)
], ids=["instance", "class"])
@pytest.mark.parametrize("mode,inverse", [(torch.no_grad, torch.enable_grad), (torch.enable_grad, torch.no_grad)],
                         ids=["no_grad", "enable_grad"])
def test_grad_mode_decorators_made_in_the_frame(decorate, mode, inverse):
    def f(x):
        def inner(v):
            return v.sin()

        with inverse():
            wrapped = decorate(mode, inner)
            outside = torch.is_grad_enabled()       # making the wrapper changes no mode
        with inverse():
            inside = wrapped(x)
        return inside, outside, wrapped

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.ones(3, requires_grad=True)
    for _ in range(2):
        expected, actual = f(x), compiled(x)
        assert same(expected[:2], actual[:2])
        assert expected[0].requires_grad == actual[0].requires_grad
        # The returned wrapper is torch's own again: calling it switches the mode as eager's does.
        with inverse():
            assert expected[2](x).requires_grad == actual[2](x).requires_grad
    assert counter.frame_count == 1
    assert torch.is_grad_enabled()


def test_a_generator_function_decorated_by_a_grad_mode_is_not_inlined():
    def f(x):
        def gen(v):
            yield v.sin()

        return list(torch.no_grad()(gen)(x))

    with pytest.raises(bytegraph.exc.GraphBreakError, match="generator function decorated"):
        bytegraph.compile(f, backend="eager", fullgraph=True)(torch.ones(2, requires_grad=True))


def test_set_grad_enabled_objects_switch_when_made_and_survive_a_break():
    def made_then_entered(x):
        x = x + 1
        ctx = torch.set_grad_enabled(False)     # switches now
        bytegraph.graph_break()
        y = x * 2                               # already without grad
        with ctx:                               # restores the mode from before it was made
            x = x + 1
        return x, y, torch.is_grad_enabled()

    def redundant_block(x):
        with torch.set_grad_enabled(torch.is_grad_enabled()):   # nothing to switch: nothing recorded
            return x.sin()

    x = torch.zeros(3, requires_grad=True)
    counter = CompileCounter()
    compiled = bytegraph.compile(made_then_entered, backend=counter)
    for mode in (True, False, True):
        torch.set_grad_enabled(mode)
        expected = made_then_entered(x)
        torch.set_grad_enabled(mode)
        actual = compiled(x)
        assert same(expected, actual) and torch.is_grad_enabled() == mode
        assert [t.requires_grad for t in expected[:2]] == [t.requires_grad for t in actual[:2]]
    torch.set_grad_enabled(True)
    assert counter.frame_count == 4  # a graph before and after the break, for each mode

    counter = CompileCounter()
    assert same(bytegraph.compile(redundant_block, backend=counter, fullgraph=True)(x), redundant_block(x))
    assert counter.op_count == 1


def test_a_graph_that_only_switches_grad_mode_goes_to_no_backend():
    def f(x):
        with torch.no_grad():
            bytegraph.graph_break()
            y = x * 2
        return y, torch.is_grad_enabled()

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    x = torch.ones(2, requires_grad=True)
    for _ in range(2):
        assert same(compiled(x), f(x))
        assert torch.is_grad_enabled()
    # The switch before the break is no graph of its own; the code after the break is one.
    assert counter.frame_count == 1


class GraphRecorder(CompileCounter):
    """Counts like CompileCounter and keeps each graph's call targets."""

    def __init__(self):
        super().__init__()
        self.targets = []

    def __call__(self, gm, example_inputs):
        self.targets.append([node.target for node in gm.graph.nodes if node.op == "call_function"])
        return super().__call__(gm, example_inputs)


ENTER, EXIT = torch.amp.autocast_mode._enter_autocast, torch.amp.autocast_mode._exit_autocast


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_an_autocast_block_is_captured_in_the_graph(backend):
    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16) as ac:
            y = torch.mm(x, w)
            if torch.is_autocast_enabled("cpu"):
                y = y + 1
        return y.relu(), y.dtype, ac.fast_dtype, torch.is_autocast_enabled("cpu")

    x, w = torch.randn(4, 4), torch.randn(4, 4, requires_grad=True)
    recorder = GraphRecorder()
    compiled = bytegraph.compile(f, backend=recorder, fullgraph=True)
    for _ in range(2):
        assert same(compiled(x, w), f(x, w))
        assert not torch.is_autocast_enabled("cpu")
    assert recorder.frame_count == 1
    assert recorder.targets[0][0] is ENTER and EXIT in recorder.targets[0]
    # Through a backend that traces autograd, the block's ops run in bfloat16 and backward works.
    compiled = bytegraph.compile(f, backend=backend, fullgraph=True)
    compiled(x, w)[0].sum().backward()
    got = w.grad.clone()
    w.grad = None
    f(x, w)[0].sum().backward()
    assert torch.equal(got, w.grad)


def test_autocast_blocks_nest_and_an_exception_leaves_them():
    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            a = x @ x
            with torch.autocast("cpu", enabled=False):
                b = x @ x
            try:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    raise ValueError("inside")
            except ValueError:
                c = x @ x
        return a.dtype, b.dtype, c.dtype, a + b + c.float()

    check(f, torch.randn(3, 3))
    assert not torch.is_autocast_enabled("cpu")


def test_a_break_inside_an_autocast_block_breaks_at_its_with(capsys):
    def f(x):
        y = x.sin()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = y @ y
            print("inside")
            w = z @ y
        return w, torch.is_autocast_enabled("cpu")

    x = torch.randn(4, 4)
    explained = bytegraph.explain(f)(x)
    assert "inside a torch.autocast block" in explained.break_reasons[0].reason
    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    for _ in range(2):
        assert same(compiled(x), f(x))
        assert not torch.is_autocast_enabled("cpu")
    # sin before the `with`, then the block's two halves around the print.
    assert counter.frame_count == 3


def test_the_autocast_dtype_a_block_defaults_to_is_guarded():
    def f(x):
        with torch.autocast("cpu"):
            return x @ x

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.randn(3, 3)
    assert compiled(x).dtype == f(x).dtype == torch.bfloat16
    before = torch.get_autocast_dtype("cpu")
    torch.set_autocast_dtype("cpu", torch.float16)
    try:
        assert compiled(x).dtype == f(x).dtype == torch.float16
    finally:
        torch.set_autocast_dtype("cpu", before)
    assert counter.frame_count == 2


def test_bad_autocast_arguments_raise_as_in_eager():
    def f(x):
        with torch.autocast("no-such-device"):
            return x + 1

    with pytest.raises(RuntimeError) as eager:
        f(X)
    with pytest.raises(RuntimeError) as compiled:
        bytegraph.compile(f, backend="eager")(X)
    assert str(compiled.value) == str(eager.value)


@pytest.mark.parametrize("profile, record_function", [
    (torch.profiler.profile, torch.profiler.record_function),
    (torch.autograd.profiler.profile, torch.autograd.profiler.record_function),
])
def test_profiler_blocks_do_nothing_in_compiled_code(profile, record_function):
    def f(x):
        y = x.sin()
        with profile():
            y = y + 2
            with record_function("my_function") as rf:
                z = y * 3
        return z, rf is not None

    check(f, torch.randn(3), ops=3)


def test_a_break_inside_profiler_blocks_keeps_both_halves_compiled():
    def f(x):
        y = x ** 2
        with torch.profiler.profile():
            y = y + 2
            with torch.profiler.record_function("my_function"):
                z = y ** 3
                z.tolist()
                z = z + 1
        return z

    check(f, torch.randn(2, 2), graphs=2)


def test_a_profiler_block_that_switches_grad_mode_inside_is_not_reentered():
    def f(x):
        with torch.profiler.record_function("f"):
            torch._C._set_grad_enabled(False)
            bytegraph.graph_break()
            y = x * 2
        torch._C._set_grad_enabled(True)
        return y, y.requires_grad

    x = torch.randn(2, requires_grad=True)
    expected = f(x)
    compiled = bytegraph.compile(f, backend="eager")
    assert same(compiled(x), expected) and same(compiled(x), expected)
    assert torch.is_grad_enabled()
