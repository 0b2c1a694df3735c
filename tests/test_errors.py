"""Errors end to end: internal errors raise or fall back per config.suppress_errors, graph
breaks are never internal errors, the same Unsupported surfaces the same way through every
binding, interrupts always reach the caller, and bad input gets a clear error while the
process keeps working."""

import collections
import logging
import threading
import types

import pytest
import torch

import bytegraph
from bytegraph import _convert_frame, _frame, comptime
from bytegraph._extension import _C
from bytegraph.exc import BackendCompilerFailed, GraphBreakError, InternalError
from bytegraph.testing import CompileCounter, same


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def add_one(x):
    return x + 1


def _warnings(caplog, text):
    return [r for r in caplog.records if r.name == "bytegraph" and text in r.getMessage()]


# ---- suppress_errors ----------------------------------------------------------------------


def test_an_internal_tracer_error_reaches_the_caller_by_default(monkeypatch):
    monkeypatch.setenv("BYTEGRAPH_TEST_TRACER", "raise")
    counter = CompileCounter()
    compiled = bytegraph.compile(add_one, backend=counter)
    with pytest.raises(InternalError, match="fails on purpose") as info:
        compiled(torch.ones(2))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"add_one ({__file__}:" in notes and "suppress_errors" in notes
    assert counter.frame_count == 0
    # Nothing was marked: once the tracer works again, the same function compiles.
    monkeypatch.delenv("BYTEGRAPH_TEST_TRACER")
    assert same(compiled(torch.ones(2)), add_one(torch.ones(2)))
    assert counter.frame_count == 1 and counter.op_count == 1


def test_suppressed_internal_errors_fall_back_and_log_once_with_the_location(monkeypatch, caplog):
    monkeypatch.setenv("BYTEGRAPH_TEST_TRACER", "raise")
    counter = CompileCounter()
    compiled = bytegraph.compile(add_one, backend=counter)
    x = torch.randn(3)
    with bytegraph.config.patch(suppress_errors=True), caplog.at_level(logging.WARNING, "bytegraph"):
        for _ in range(3):
            assert same(compiled(x), add_one(x))
    assert counter.frame_count == 0
    messages = _warnings(caplog, "could not compile")
    assert len(messages) == 1
    text = messages[0].getMessage()
    line = add_one.__code__.co_firstlineno
    assert f"add_one ({__file__}:{line})" in text and "fails on purpose" in text


def test_a_python_error_in_the_compile_path_is_an_internal_error_chained_to_it(monkeypatch):
    def broken(*args):
        raise TypeError("a bug in the compile path")

    monkeypatch.setattr(_convert_frame, "_log_compiled", broken)
    compiled = bytegraph.compile(add_one, backend=CompileCounter())
    with pytest.raises(InternalError, match="while compiling add_one .*TypeError: a bug") as info:
        compiled(torch.ones(2))
    assert isinstance(info.value.__cause__, TypeError)


def test_graph_breaks_are_not_internal_errors(monkeypatch):
    monkeypatch.setenv("BYTEGRAPH_TEST_TRACER", "break")
    counter = CompileCounter()
    x = torch.randn(3)
    assert same(bytegraph.compile(add_one, backend=counter)(x), add_one(x))
    assert counter.frame_count == 0
    bytegraph.reset()  # the break marked the code as running eagerly
    with pytest.raises(GraphBreakError, match="forced_by_test"):
        bytegraph.compile(add_one, backend=counter, fullgraph=True)(x)


def test_a_fullgraph_break_raises_even_when_errors_are_suppressed():
    def f(x):
        bytegraph.graph_break()
        return x + 1

    with bytegraph.config.patch(suppress_errors=True):
        with pytest.raises(GraphBreakError, match="explicit_graph_break") as info:
            bytegraph.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
    assert info.value.hint == _C.break_hint("explicit_graph_break")


def test_a_failing_backend_raises_unless_errors_are_suppressed(caplog):
    def failing(gm, example_inputs):
        raise ValueError("backend bug")

    x = torch.ones(2)
    with pytest.raises(BackendCompilerFailed, match="backend bug"):
        bytegraph.compile(add_one, backend=failing)(x)
    bytegraph.reset()
    with bytegraph.config.patch(suppress_errors=True), caplog.at_level(logging.WARNING, "bytegraph"):
        assert same(bytegraph.compile(add_one, backend=failing)(x), add_one(x))
    assert len(_warnings(caplog, "backend bug")) == 1


def test_an_exception_of_a_comptime_function_reaches_the_caller_as_itself():
    def f(a):
        comptime(lambda ctx: 1 / 0)
        return a + 1

    with pytest.raises(ZeroDivisionError):
        bytegraph.compile(f, backend=CompileCounter())(torch.ones(2))


# ---- one error boundary ---------------------------------------------------------------------


def test_every_break_kind_has_a_hint():
    kinds = _C.break_kinds()
    assert len(kinds) >= 35
    assert all(len(hint) > 20 for hint in kinds.values())
    assert _C.break_hint("no_such_kind")  # unknown kinds get the generic hint, no crash


def _printing(x):
    print("side effect")
    return x + 1


def test_the_same_unsupported_surfaces_the_same_way_through_every_binding():
    x = torch.ones(2)
    with pytest.raises(_C.Unsupported) as traced:
        _C.trace.trace(_printing, (x,))

    def comptime_break(ctx):
        ctx.graph_break("asked for")

    def f(a):
        comptime(comptime_break)
        return a

    with pytest.raises(_C.Unsupported) as requested:
        _C.trace.trace(f, (x,))
    for error in (traced.value, requested.value):
        assert type(error) is _C.Unsupported and isinstance(error, RuntimeError)
        assert error.kind in _C.break_kinds()
        assert error.hint == _C.break_kinds()[error.kind]
        assert error.message and isinstance(error.user_stack, list)
        assert str(error).startswith(error.kind + ": ")
    assert traced.value.kind == "print" and requested.value.kind == "comptime_graph_break"


def test_a_graph_break_from_the_hook_is_the_same_type_as_from_the_bindings():
    seen = []

    def callback(info):
        if info.f_code is not _printing.__code__:
            return None
        try:
            _C.trace.trace_frame(info.function, (info.f_locals["x"],))
        except _C.Unsupported as error:
            seen.append(error)
            raise

    with _frame.raise_on_compile_error(), _frame.hooked(callback):
        with pytest.raises(_C.Unsupported) as info:
            _printing(torch.ones(2))
    assert info.value is seen[0] and info.value.kind == "print"


# ---- interrupts ------------------------------------------------------------------------------


def test_keyboard_interrupt_in_a_backend_reaches_the_caller_and_compiling_still_works():
    calls = []

    def interrupted(gm, example_inputs):
        calls.append(gm)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return gm.forward

    compiled = bytegraph.compile(add_one, backend=interrupted)
    x = torch.randn(2)
    with bytegraph.config.patch(suppress_errors=True):
        with pytest.raises(KeyboardInterrupt):
            compiled(x)
        assert same(compiled(x), add_one(x))
    assert len(calls) == 2
    assert len(_frame.cache_entries(add_one.__code__)) == 1


def test_keyboard_interrupt_inside_the_tracer_is_not_a_graph_break():
    class Interrupting:
        @property
        def scale(self):
            raise KeyboardInterrupt

    obj = Interrupting()

    def f(x):
        return x * obj.scale

    with bytegraph.config.patch(suppress_errors=True):
        with pytest.raises(KeyboardInterrupt):
            bytegraph.compile(f, backend=CompileCounter())(torch.ones(2))
    assert not _frame.is_skipped(f.__code__)


def test_keyboard_interrupt_from_a_raw_callback_is_never_swallowed():
    def victim(x):
        return x

    def callback(info):
        if info.f_code is victim.__code__:
            raise KeyboardInterrupt

    with _frame.raise_on_compile_error(False), _frame.hooked(callback):
        with pytest.raises(KeyboardInterrupt):
            victim(1)
    assert victim(1) == 1


# ---- regressions: compile failures the fallback used to hide ---------------------------------


def test_a_frame_whose_builtins_lack_import_is_captured():
    """namedtuple's generated __new__ runs with `__builtins__ = {}`: the hook must not import
    through the current frame's builtins (it raised KeyError('__import__'))."""
    Point = collections.namedtuple("Point", "x y")

    def f(x):
        return Point(x + 1, x * 2)

    counter = CompileCounter()
    x = torch.randn(2)
    assert same(tuple(bytegraph.compile(f, backend=counter)(x)), tuple(f(x)))
    assert counter.frame_count == 1 and counter.op_count == 2
    bare = types.FunctionType(add_one.__code__, {"__builtins__": {}})
    assert same(bytegraph.compile(bare, backend=counter)(x), x + 1)
    assert counter.frame_count == 2


def test_a_guard_on_a_closure_cell_fails_when_the_closure_is_gone():
    """The guard on fn.__closure__[0] raised TypeError for a function without a closure
    (None is not subscriptable), and the frame then ran eagerly for good."""

    def apply(fn, x):
        return fn(x) + 1

    counter = CompileCounter()
    compiled = bytegraph.compile(apply, backend=counter)
    scale = 2.0
    x = torch.ones(2)
    assert same(compiled(lambda t: t * scale, x), x * 2 + 1)
    assert same(compiled(lambda t: t - 1, x), x)
    assert counter.frame_count == 2
    assert not _frame.is_skipped(apply.__code__)


# ---- bad input: clear errors, nothing lost ---------------------------------------------------


def _two_outputs(gm, example_inputs):
    def compiled(*args):
        return (torch.zeros(1), *gm.forward(*args))

    return compiled


def _bare_tensor(gm, example_inputs):
    return lambda *args: gm.forward(*args)[0]


@pytest.mark.parametrize("backend, got", [(_two_outputs, "2 values"), (_bare_tensor, "returned Tensor")])
def test_a_backend_returning_the_wrong_number_of_outputs_is_a_clear_error(backend, got):
    compiled = bytegraph.compile(add_one, backend=backend)
    x = torch.ones(2)
    for _ in range(2):  # every call, not only the first: never a silently wrong value
        with pytest.raises(BackendCompilerFailed, match=f"{got}; the graph has 1 outputs"):
            compiled(x)
    bytegraph.reset()
    counter = CompileCounter()
    assert same(bytegraph.compile(add_one, backend=counter)(x), x + 1)
    assert counter.frame_count == 1


def test_a_backend_returning_a_non_callable_is_a_clear_error():
    with pytest.raises(BackendCompilerFailed, match="not callable"):
        bytegraph.compile(add_one, backend=lambda gm, inputs: "compiled")(torch.ones(2))


def test_a_guard_failure_callback_that_raises(caplog):
    def complain(reason):
        raise RuntimeError(f"guard failed: {reason}")

    counter = CompileCounter()
    compiled = bytegraph.optimize(counter, guard_fail_fn=complain)(add_one)
    assert same(compiled(torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(RuntimeError, match=r"guard failed: .*L\['x'\]"):
        compiled(torch.ones(3))  # the user's own error, as raised
    assert counter.frame_count == 1
    with bytegraph.config.patch(suppress_errors=True), caplog.at_level(logging.WARNING, "bytegraph"):
        assert same(compiled(torch.ones(4)), torch.full((4,), 2.0))  # eager, correct
    assert len(_warnings(caplog, "guard failed")) == 1
    assert _frame.is_skipped(add_one.__code__)  # logged once: eager from now on
    assert same(compiled(torch.ones(2)), torch.full((2,), 2.0))
    assert counter.frame_count == 1


def test_a_function_whose_code_is_swapped_after_compiling():
    def f(x):
        return x + 1

    def g(x):
        return x * 10

    original = f.__code__
    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    x = torch.ones(2)
    try:
        assert same(compiled(x), x + 1)
        f.__code__ = g.__code__
        assert same(compiled(x), x * 10)
        assert counter.frame_count == 2
        f.__code__ = original
        assert same(compiled(x), x + 1)
        assert counter.frame_count == 2  # the first entry is still the code's own
    finally:
        f.__code__ = original


class _Rebuilding(torch.nn.Module):
    """Replaces its own layer and counts its calls while running forward."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        torch.nn.init.constant_(self.lin.weight, 0.5)
        torch.nn.init.zeros_(self.lin.bias)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        y = self.lin(x)
        replacement = torch.nn.Linear(2, 2)
        torch.nn.init.constant_(replacement.weight, float(self.calls))
        torch.nn.init.zeros_(replacement.bias)
        self.lin = replacement
        return y * self.calls


def test_a_module_mutated_during_its_own_forward():
    module, reference = _Rebuilding(), _Rebuilding()
    counter = CompileCounter()
    compiled = bytegraph.compile(module, backend=counter)
    x = torch.ones(2)
    for _ in range(3):
        assert same(compiled(x), reference(x))
        assert module.calls == reference.calls
        assert torch.equal(module.lin.weight, reference.lin.weight)
    assert counter.frame_count >= 3  # the layer call is captured each time


def test_trace_results_and_guard_trees_take_part_in_garbage_collection():
    # A result and its guard tree held from the traced module's globals: a cycle through the
    # guarded functions that only tp_traverse/tp_clear let the collector see.
    import gc
    import weakref

    from bytegraph._C import trace as _trace

    def make():
        namespace = {"torch": torch}
        exec("def helper(x):\n    return x * 2\ndef f(x):\n    return helper(x) + 1", namespace)
        result = _trace.trace(namespace["f"], (torch.ones(2),), {})
        namespace["held"] = (result, result.build_guards())
        return weakref.ref(namespace["helper"]), weakref.ref(namespace["f"])

    refs = make()
    gc.collect()
    assert [ref() for ref in refs] == [None, None]


def test_compiling_and_calling_from_eight_threads_gives_eager_results():
    import threading

    from bytegraph.testing import CompileCounter

    def f(x, k):
        y = x * k
        if y.sum() > 0:  # a break: resume functions are compiled and called concurrently too
            y = y + 1
        return y.relu()

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    failures = []

    def work(seed):
        try:
            for j in range(100):
                x = torch.randn(3 + j % 3) * (1 if j % 2 else -1)
                k = (seed + j) % 4
                if not torch.equal(compiled(x, k), f(x, k)):
                    failures.append((seed, j))
        except Exception as error:  # noqa: BLE001 (reported below)
            failures.append(repr(error))

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and counter.frame_count >= 2
