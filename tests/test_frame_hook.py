"""The PEP 523 frame hook and the per-code cache (bytegraph/_frame.py, csrc/frame/).

Replacement code in these tests is a *different* function with the same signature that tags
its result with "R", so every test can tell whether the replacement ran, and compares the
rest of the result with what the original function returns when called without the hook.
"""

import asyncio
import copy
import gc
import logging
import sys
import threading
import traceback
import tracemalloc
import weakref

import pytest

from bytegraph import _frame


@pytest.fixture(autouse=True)
def clean_hook_state():
    _frame.reset()
    yield
    assert _frame.get_callback() is None, "a test left the hook enabled"
    _frame.reset()


class Recorder:
    """A frame callback that records the codes it sees and answers from a table."""

    def __init__(self, replacements=None):
        self.replacements = replacements or {}
        self.seen = []

    def __call__(self, frame_info):
        self.seen.append(frame_info.f_code)
        return self.replacements.get(frame_info.f_code)

    def count(self, code):
        return sum(1 for seen in self.seen if seen is code)


def make_pair(signature, names):
    """An original function returning its arguments, and a same-signature replacement
    returning ("R", *arguments)."""
    values = ", ".join(names) + ("," if len(names) == 1 else "")
    namespace = {}
    exec(f"def f{signature}:\n    return ({values})\n", namespace)
    original = namespace.pop("f")
    exec(f"def f{signature}:\n    return ('R', {values})\n", namespace)
    replacement = namespace.pop("f")
    return original, replacement


ARGUMENT_SHAPES = [
    pytest.param("(a, b)", ["a", "b"], [((1, 2), {}), ((), {"a": 1, "b": 2}), ((1,), {"b": 2})], id="positional"),
    pytest.param("(a, b, /, c)", ["a", "b", "c"], [((1, 2, 3), {}), ((1, 2), {"c": 3})], id="positional-only"),
    pytest.param("(a, *, k, m=5)", ["a", "k", "m"], [((1,), {"k": 2}), ((1,), {"k": 2, "m": 3})], id="keyword-only"),
    pytest.param("(a, *args)", ["a", "args"], [((1,), {}), ((1, 2, 3), {})], id="varargs"),
    pytest.param("(a, **kw)", ["a", "kw"], [((1,), {}), ((1,), {"x": 2, "y": 3}), ((), {"a": 1, "z": 0})], id="varkwargs"),
    pytest.param("(a, b=10, c=None)", ["a", "b", "c"], [((1,), {}), ((1, 2), {}), ((1,), {"c": 3})], id="defaults"),
    pytest.param(
        "(a, b=2, /, c=3, *args, d, e=5, **kw)",
        ["a", "b", "c", "args", "d", "e", "kw"],
        [((1,), {"d": 4}), ((1, 2, 3, 4, 5), {"d": 6, "e": 7, "z": 8}), ((1,), {"c": 9, "d": 0, "b": "kw-named-b"})],
        id="combined",
    ),
    pytest.param("(*args, **kw)", ["args", "kw"], [((), {}), ((1, 2), {"k": 3})], id="only-star"),
    pytest.param("()", [], [((), {})], id="no-arguments"),
]


@pytest.mark.parametrize("signature, names, calls", ARGUMENT_SHAPES)
def test_replacement_code_receives_every_argument_shape(signature, names, calls):
    if not names:
        original, replacement = make_pair(signature, ["None"])
    else:
        original, replacement = make_pair(signature, names)
    recorder = Recorder({original.__code__: replacement.__code__})
    expected = [original(*args, **kwargs) for args, kwargs in calls]
    with _frame.hooked(recorder):
        got = [original(*args, **kwargs) for args, kwargs in calls]
    assert got == [("R",) + tuple(result) for result in expected]
    assert recorder.count(original.__code__) == 1, "the cache must serve every call after the first"
    assert len(_frame.cache_entries(original.__code__)) == 1


def test_frames_are_intercepted_and_counted_including_nested_calls():
    def leaf(x):
        return x + 1

    def outer(x):
        return leaf(x) * 2

    recorder = Recorder()
    with _frame.hooked(recorder):
        assert outer(1) == 4
        assert outer(2) == 6
    # No entry was added (the callback returned None), so each call asks again.
    assert recorder.count(outer.__code__) == 2
    assert recorder.count(leaf.__code__) == 2
    assert _frame.miss_count(outer.__code__) == 2
    assert outer(3) == 8
    assert recorder.count(outer.__code__) == 2, "the hook must be off outside hooked()"


def times_ten(x):
    return x * 10


def test_frames_called_by_replacement_code_are_intercepted():
    def f(x):
        return x

    def replacement_factory():
        def f(x):
            return ("R", times_ten(x))

        return f

    recorder = Recorder({f.__code__: replacement_factory().__code__})
    with _frame.hooked(recorder):
        assert f(2) == ("R", 20)
        assert f(3) == ("R", 30)
    assert recorder.count(times_ten.__code__) == 2


def test_methods_pass_self_as_an_argument_slot():
    class Box:
        def __init__(self, value):
            self.value = value

        def get(self, extra=0):
            return self.value + extra

    class Replacement:
        def get(self, extra=0):
            return ("R", self.value + extra)

    recorder = Recorder({Box.get.__code__: Replacement.get.__code__})
    box = Box(5)
    with _frame.hooked(recorder):
        assert box.get() == ("R", 5)
        assert box.get(extra=2) == ("R", 7)


def make_adder(k):
    def f(x):
        return x + k

    return f


def make_tagged_adder(k):
    def f(x):
        return ("R", x + k)

    return f


def test_closures_take_free_variables_from_the_called_function():
    add10 = make_adder(10)
    add20 = make_adder(20)
    assert add10.__code__ is add20.__code__
    recorder = Recorder({add10.__code__: make_tagged_adder(0).__code__})
    with _frame.hooked(recorder):
        assert add10(1) == ("R", 11)
        # Same code object, hence the same cache entry, but its own closure.
        assert add20(1) == ("R", 21)
        assert add10(2) == ("R", 12)
    assert recorder.count(add10.__code__) == 1


def test_cell_arguments_are_raw_values_at_hook_time_and_cells_afterwards():
    def f(x, y=3):
        def inner():
            return x * y

        x += 1  # rebinds the cell, seen by inner
        return inner()

    def make_replacement():
        def f(x, y=3):
            def inner():
                return x * y

            x += 1
            return ("R", inner())

        return f

    seen_locals = []

    def callback(info):
        if info.f_code is f.__code__:
            seen_locals.append(dict(info.f_locals))
            return make_replacement().__code__

    assert f.__code__.co_cellvars == ("x", "y")
    expected = [f(2), f(4, y=2)]
    assert expected == [9, 10]
    with _frame.hooked(callback):
        assert [f(2), f(4, y=2)] == [("R", value) for value in expected]
    assert seen_locals == [{"x": 2, "y": 3}]


def test_callback_sees_globals_builtins_function_and_free_variables():
    add = make_adder(7)
    infos = []

    def callback(info):
        infos.append(info)

    with _frame.hooked(callback):
        add(1)
    (info,) = [i for i in infos if i.f_code is add.__code__]
    assert info.f_globals is globals()
    assert info.f_builtins is __builtins__ or info.f_builtins is getattr(__builtins__, "__dict__", None)
    assert info.function is add
    assert info.f_locals == {"x": 1, "k": 7}


def raising(x):
    if x > 0:
        raise ValueError(f"bad {x}")
    return x


def test_exception_in_replacement_code_propagates_with_the_user_function_in_the_traceback():
    replacement = raising.__code__.replace()  # same behaviour, a distinct code object
    recorder = Recorder({raising.__code__: replacement})
    with _frame.hooked(recorder):
        with pytest.raises(ValueError, match="bad 3") as info:
            raising(3)
        assert raising(0) == 0
    assert _frame.cache_entries(raising.__code__)[0]["code"] is replacement
    frames = traceback.extract_tb(info.tb)
    assert frames[-1].name == "raising"
    assert frames[-1].filename == __file__
    assert frames[-1].line == 'raise ValueError(f"bad {x}")'
    # The code that raised is the replacement (through its positional copy), not the original.
    last_tb = info.tb
    while last_tb.tb_next is not None:
        last_tb = last_tb.tb_next
    assert last_tb.tb_frame.f_code is not raising.__code__
    assert _frame.is_our_code(last_tb.tb_frame.f_code)


def test_hook_enabled_on_one_thread_does_not_affect_another():
    original, replacement = make_pair("(a)", ["a"])
    recorder = Recorder({original.__code__: replacement.__code__})
    enabled = threading.Event()
    release = threading.Event()
    results = {}

    def hooked_thread():
        with _frame.hooked(recorder):
            results["hooked-before"] = original(1)
            enabled.set()
            release.wait(10)
            results["hooked-after"] = original(2)

    def plain_thread():
        enabled.wait(10)
        # The code now has a cache entry, but this thread never enabled the hook.
        results["plain"] = [original(i) for i in range(100)]
        results["plain-callback"] = _frame.get_callback()
        release.set()

    threads = [threading.Thread(target=hooked_thread), threading.Thread(target=plain_thread)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert results["hooked-before"] == ("R", 1)
    assert results["hooked-after"] == ("R", 2)
    assert results["plain"] == [(i,) for i in range(100)]
    assert results["plain-callback"] is None
    assert recorder.count(original.__code__) == 1
    assert _frame._frame.enabled_thread_count() == 0
    assert not _frame._frame.hook_installed()


def test_two_threads_with_different_callbacks():
    original, replacement = make_pair("(a)", ["a"])
    seen = {"one": Recorder(), "two": Recorder()}
    barrier = threading.Barrier(2)
    errors = []

    def run(name):
        try:
            with _frame.hooked(seen[name]):
                barrier.wait(10)
                for i in range(200):
                    assert original(i) == (i,)
                barrier.wait(10)
        except Exception as error:  # surfaced by the assert below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(name,)) for name in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert errors == []
    assert seen["one"].count(original.__code__) == 200
    assert seen["two"].count(original.__code__) == 200


def test_hooked_is_nestable_and_restores_the_previous_callback():
    first, second = Recorder(), Recorder()

    def probe():
        return 1

    with _frame.hooked(first):
        probe()
        with _frame.hooked(second):
            assert _frame.get_callback() is second
            probe()
        assert _frame.get_callback() is first
        probe()
        with pytest.raises(KeyError):
            with _frame.hooked(second):
                raise KeyError("leaves the block")
        assert _frame.get_callback() is first
        with _frame.hooked(None):
            probe()
    assert _frame.get_callback() is None
    assert first.count(probe.__code__) == 2
    assert second.count(probe.__code__) == 1


def test_set_callback_returns_the_previous_one():
    recorder = Recorder()
    assert _frame.set_callback(recorder) is None
    try:
        assert _frame._frame.hook_installed()
        assert _frame.set_callback(None) is recorder
    finally:
        _frame.set_callback(None)
    assert not _frame._frame.hook_installed()
    with pytest.raises(TypeError):
        _frame.set_callback(42)


def int_or_str(x):
    return x


def test_guarded_entries_select_the_matching_replacement():
    def for_ints(x):
        return ("int", x)

    def for_strs(x):
        return ("str", x)

    calls = []
    guard_functions = []

    def is_int(info):
        guard_functions.append(info.function)
        return isinstance(info.f_locals["x"], int)

    def callback(info):
        if info.f_code is not int_or_str.__code__:
            return None
        calls.append(info.f_locals["x"])
        if isinstance(info.f_locals["x"], int):
            return (for_ints.__code__, is_int, "keep-int")
        if isinstance(info.f_locals["x"], str):
            return (for_strs.__code__, lambda i: isinstance(i.f_locals["x"], str))
        return None

    code = int_or_str.__code__
    with _frame.hooked(callback):
        assert int_or_str(1) == ("int", 1)
        assert int_or_str("a") == ("str", "a")
        assert int_or_str(2) == ("int", 2)
        assert [e["code"] for e in _frame.cache_entries(code)] == [for_ints.__code__, for_strs.__code__]
        assert int_or_str("b") == ("str", "b")
        assert int_or_str(2.5) == 2.5  # neither guard passes: a miss, the callback returns None
    assert calls == [1, "a", 2.5]
    entries = _frame.cache_entries(code)
    assert [e["code"] for e in entries] == [for_strs.__code__, for_ints.__code__], "a hit moves to the front"
    assert [e["keepalive"] for e in entries] == [None, "keep-int"]
    assert all(e["has_guards"] and e["guards"][0].startswith("python guard") for e in entries)
    assert guard_functions and all(f is int_or_str for f in guard_functions)


def test_an_entry_without_guards_always_matches():
    original, replacement = make_pair("(a)", ["a"])
    _frame.add_entry(original, replacement.__code__)
    with _frame.hooked(Recorder()):
        assert original(1) == ("R", 1)
        assert original("x") == ("R", "x")
    assert _frame.cache_entries(original.__code__)[0]["guards"] == []


def test_entries_must_keep_argument_names_freevars_and_cellvars():
    original, _ = make_pair("(a, b)", ["a", "b"])
    other_names, _ = make_pair("(a, c)", ["a", "c"])
    more_slots, _ = make_pair("(a, b, c)", ["a", "b", "c"])
    _, other_split = make_pair("(a, /, *, b)", ["a", "b"])
    with pytest.raises(ValueError, match="leading argument names"):
        _frame.add_entry(original, other_names.__code__)
    with pytest.raises(ValueError, match="number of argument slots"):
        _frame.add_entry(original, more_slots.__code__)
    with pytest.raises(ValueError, match="co_freevars"):
        _frame.add_entry(make_adder(1), (lambda x: x).__code__)

    def with_cell(x):
        return lambda: x

    def without_cell(x):
        return x

    with pytest.raises(ValueError, match="co_cellvars"):
        _frame.add_entry(with_cell, without_cell.__code__)
    with pytest.raises(TypeError):
        _frame.add_entry(original, "not code")
    assert _frame.cache_entries(original.__code__) == []
    # Same slots and names, split differently: every slot is passed positionally anyway.
    _frame.add_entry(original, other_split.__code__)
    with _frame.hooked(Recorder()):
        assert original(1, b=2) == ("R", 1, 2)


class Keep:
    pass


def test_code_objects_dying_free_their_cache():
    module_code = compile("def fresh(x):\n    return x\n", "<fresh>", "exec")
    namespace = {}
    exec(module_code, namespace)
    fresh = namespace.pop("fresh")  # the globals must not keep the function alive
    replacement = compile("def fresh(x):\n    return ('R', x)\n", "<fresh>", "exec").co_consts[0]
    keep = Keep()
    keep_ref = weakref.ref(keep)
    with _frame.hooked(lambda info: (replacement, None, keep) if info.f_code is fresh.__code__ else None):
        assert fresh(1) == ("R", 1)
    caches_before = _frame._frame.live_cache_count()
    code_ref = weakref.ref(fresh.__code__)
    del keep, fresh, module_code, replacement
    gc.collect()
    assert code_ref() is None
    assert keep_ref() is None, "the cache entry (and its keepalive) must die with the code object"
    assert _frame._frame.live_cache_count() < caches_before


def test_clear_cache_and_reset_drop_entries():
    original, replacement = make_pair("(a)", ["a"])
    keep = Keep()
    keep_ref = weakref.ref(keep)
    recorder = Recorder({original.__code__: replacement.__code__})
    _frame.add_entry(original, replacement.__code__, None, keep)
    del keep
    _frame.clear_cache(original.__code__)
    assert _frame.cache_entries(original.__code__) == []
    assert keep_ref() is None
    with _frame.hooked(recorder):
        assert original(1) == ("R", 1)
        assert _frame.reset() >= 1
        assert _frame.cache_entries(original.__code__) == []
        assert original(2) == ("R", 2)
    assert recorder.count(original.__code__) == 2


def test_skip_marks():
    def skipped(x):
        return x

    def self_skipping(x):
        return x

    def callback(info):
        seen.append(info.f_code)
        if info.f_code is self_skipping.__code__:
            _frame.mark_skip(info.f_code)

    seen = []
    _frame.mark_skip(skipped.__code__)
    assert _frame.is_skipped(skipped.__code__)
    with _frame.hooked(callback):
        for i in range(3):
            assert skipped(i) == i
            assert self_skipping(i) == i
    assert skipped.__code__ not in seen
    assert seen.count(self_skipping.__code__) == 1
    _frame.reset()
    assert not _frame.is_skipped(skipped.__code__)


def test_code_marked_as_ours_is_never_intercepted():
    def ours(x):
        return x

    _frame.mark_own_code(ours.__code__)
    recorder = Recorder()
    with _frame.hooked(recorder):
        ours(1)
    assert recorder.count(ours.__code__) == 0
    assert _frame.is_our_code(ours.__code__)
    assert not _frame.is_our_code(test_code_marked_as_ours_is_never_intercepted.__code__)
    with pytest.raises(TypeError):
        _frame.is_our_code("not code")


def test_generators_coroutines_and_async_generators_are_not_intercepted():
    def gen(n):
        try:
            for i in range(n):
                yield i
        finally:
            cleanup.append(n)

    async def coro(x):
        return x

    async def agen():
        yield 1

    async def drive():
        return [await coro(2), [v async for v in agen()]]

    cleanup = []
    recorder = Recorder()
    with _frame.hooked(recorder):
        assert list(gen(3)) == [0, 1, 2]
        g = gen(5)
        next(g)
        with pytest.raises(RuntimeError):
            g.throw(RuntimeError("thrown into the generator"))
        assert asyncio.run(drive()) == [2, [1]]
    assert cleanup == [3, 5]
    for code in (gen.__code__, coro.__code__, agen.__code__):
        assert recorder.count(code) == 0


def test_callback_and_guards_calling_python_are_not_hooked():
    def helper():
        return 1

    def target(x):
        return x

    calls = []

    def callback(info):
        calls.append(info.f_code)
        helper()
        if info.f_code is target.__code__:
            return (target.__code__.replace(), lambda i: helper() == 1)

    with _frame.hooked(callback):
        assert target(1) == 1
        assert target(2) == 1 + 1
    assert helper.__code__ not in calls
    assert calls.count(target.__code__) == 1


def test_callback_errors_are_logged_once_and_the_frame_runs_unmodified(caplog):
    def broken(x):
        return x * 2

    def after(x):
        return x

    seen = []

    def callback(info):
        seen.append(info.f_code)
        if info.f_code is broken.__code__:
            raise RuntimeError("compiler exploded")

    with caplog.at_level(logging.WARNING, logger="bytegraph"), _frame.raise_on_compile_error(False):
        with _frame.hooked(callback):
            assert broken(2) == 4
            assert broken(3) == 6
            assert after(1) == 1  # the hook is back on for this thread after the failure
    assert seen.count(broken.__code__) == 1
    assert seen.count(after.__code__) == 1
    messages = [r for r in caplog.records if r.name == "bytegraph" and "broken" in r.getMessage()]
    assert len(messages) == 1
    assert "compiler exploded" in messages[0].getMessage()
    assert _frame.is_skipped(broken.__code__)
    assert sys.exc_info() == (None, None, None)


def test_bad_callback_results_and_invariant_errors_are_compile_failures(caplog):
    def f(a):
        return a

    def g(b):
        return b

    results = {f.__code__: "not a code object", g.__code__: f.__code__}
    with caplog.at_level(logging.WARNING, logger="bytegraph"), _frame.raise_on_compile_error(False):
        with _frame.hooked(lambda info: results.get(info.f_code)):
            assert f(1) == 1
            assert g(2) == 2
    text = caplog.text
    assert "must return None, a code object" in text
    assert "leading argument names" in text


def test_raise_on_compile_error_switch():
    def victim(x):
        return x

    def callback(info):
        if info.f_code is victim.__code__:
            raise KeyError("surfaced")

    with _frame.raise_on_compile_error():
        with _frame.hooked(callback):
            with pytest.raises(KeyError, match="surfaced"):
                victim(1)
    assert victim(1) == 1


def test_guard_that_raises_falls_back_to_the_original():
    def f(x):
        return x

    def bad_guard(info):
        raise ZeroDivisionError("guard failed")

    _frame.add_entry(f, f.__code__.replace(), bad_guard)
    with _frame.raise_on_compile_error(False), _frame.hooked(Recorder()):
        assert f(5) == 5
        assert f(6) == 6
    assert _frame.is_skipped(f.__code__)


def leak_probe(a, b=1, *args, key=None, **kw):
    return a


def leak_probe_replacement(a, b=1, *args, key=None, **kw):
    return b


def test_100k_calls_do_not_grow_memory_or_references():
    arg = object()
    kw_value = object()
    recorder = Recorder({leak_probe.__code__: leak_probe_replacement.__code__})
    closure_fns = [make_adder(i) for i in range(3)]
    recorder.replacements[closure_fns[0].__code__] = make_tagged_adder(0).__code__

    def run(n):
        for i in range(n):
            leak_probe(0, arg, 3, key=kw_value, extra=arg)
            closure_fns[i % 3](i)

    with _frame.hooked(recorder):
        run(2000)  # warm up: entries, caches, allocator pools
        gc.collect()
        refs_before = (sys.getrefcount(arg), sys.getrefcount(kw_value))
        objects_before = len(gc.get_objects())
        run(100_000)
        gc.collect()
        refs_after = (sys.getrefcount(arg), sys.getrefcount(kw_value))
        objects_after = len(gc.get_objects())
        tracemalloc.start()
        snapshot_before = tracemalloc.take_snapshot()
        run(100_000)
        gc.collect()
        snapshot_after = tracemalloc.take_snapshot()
        tracemalloc.stop()
    assert leak_probe(0, arg) == 0
    assert refs_after == refs_before
    assert objects_after - objects_before < 20
    growth = sum(stat.size_diff for stat in snapshot_after.compare_to(snapshot_before, "filename"))
    assert growth < 64 * 1024, f"memory grew by {growth} bytes over 100k calls"
    assert recorder.count(leak_probe.__code__) == 1
    assert recorder.count(closure_fns[0].__code__) == 1


def test_100k_calls_with_python_guards_do_not_leak():
    def guarded(x):
        return x

    arg = object()
    _frame.add_entry(guarded, guarded.__code__.replace(), lambda info: info.f_locals["x"] is arg)
    with _frame.hooked(Recorder()):
        for _ in range(1000):
            guarded(arg)
        gc.collect()
        before = (sys.getrefcount(arg), len(gc.get_objects()))
        for _ in range(100_000):
            guarded(arg)
        gc.collect()
        after = (sys.getrefcount(arg), len(gc.get_objects()))
    assert after[0] == before[0]
    assert after[1] - before[1] < 20
    assert _frame.stats()["cache_hits"] >= 101_000


def countdown(n):
    return 0 if n == 0 else countdown(n - 1)


def test_recursion_through_replacement_code_and_recursion_errors():
    replacement = compile(
        "def countdown(n):\n    return 0 if n == 0 else 1 + countdown(n - 1)\n", __file__, "exec"
    ).co_consts[0]
    recorder = Recorder({countdown.__code__: replacement})
    with _frame.hooked(recorder):
        assert countdown(50) == 50  # every level is a cache hit running the replacement
        with pytest.raises(RecursionError):
            countdown(sys.getrecursionlimit() * 2)
        assert countdown(3) == 3
    assert recorder.count(countdown.__code__) == 1


def test_tracing_still_sees_replacement_frames():
    original, replacement = make_pair("(a)", ["a"])
    events = []

    def tracer(frame, event, arg):
        if event == "call":
            events.append(frame.f_code.co_name)
        return None

    with _frame.hooked(Recorder({original.__code__: replacement.__code__})):
        sys.settrace(tracer)
        try:
            result = original(4)
        finally:
            sys.settrace(None)
    assert result == ("R", 4)
    assert "f" in events


def test_threads_ending_while_enabled_release_their_state():
    script = """
import threading
from bytegraph import _frame
def f(x): return x
def g(x): return ("R", x)
_frame.set_callback(lambda info: g.__code__ if info.f_code is f.__code__ else None)
assert f(1) == ("R", 1)
def worker():
    _frame.set_callback(lambda info: None)
    assert f(2) == ("R", 2)
t = threading.Thread(target=worker); t.start(); t.join()
assert _frame._frame.enabled_thread_count() == 1
print("ok")
"""  # the interpreter exits with the hook still enabled on the main thread
    import os
    import subprocess

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.dirname(os.path.dirname(__file__)), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# --- CapturedCall: a compiled function's wrapper ----------------------------------------------


def _probe(log):
    def probe(x, scale=1):
        log.append(_frame.get_callback())
        if x < 0:
            raise ValueError("negative")
        return x * scale
    return probe


def test_captured_call_sets_the_callback_only_while_its_function_runs():
    log, callback, verified = [], Recorder(), Recorder()
    call = _frame.CapturedCall(_probe(log), callback, verified)
    assert call(3, scale=2) == 6 and log == [callback] and _frame.get_callback() is None
    with pytest.raises(ValueError, match="negative"):
        call(-1)
    assert _frame.get_callback() is None
    # Nested in another capturing span: that span's callback is back afterwards, unchanged.
    outer = Recorder()
    with _frame.hooked(outer):
        assert call(1) == 1
        assert _frame.get_callback() is outer
    assert log[-1] is callback and verified.seen == []


def test_captured_call_honours_force_eager_and_verify_correctness():
    log, callback = [], Recorder()
    verified_calls = []

    def verified(*args, **kwargs):
        verified_calls.append((args, kwargs))
        return "verified"

    call = _frame.CapturedCall(_probe(log), callback, verified)
    _frame.set_forced_eager(True)
    try:
        assert call(2) == 2 and log == [None]
    finally:
        _frame.set_forced_eager(False)
    _frame.set_verify_correctness(True)
    try:
        assert call(2, scale=3) == "verified" and verified_calls == [((2,), {"scale": 3})]
    finally:
        _frame.set_verify_correctness(False)


def test_captured_call_answers_positional_hits_itself_exactly_as_the_hook_does():
    """A positional call through the wrapper looks the cache up itself and, on a hit, calls
    the entry without making the user's frame; keyword calls, defaults to fill in and misses
    go through the hook. Results, counters and profiler events are the same either way."""
    original, replacement = make_pair("(a, b=5)", ["a", "b"])
    recorder = Recorder({original.__code__: replacement.__code__})
    call = _frame.CapturedCall(original, recorder, Recorder())
    _frame.reset_stats()
    events = []

    def profiler(frame, event, arg):
        if event == "call":
            events.append(frame.f_code.co_name)

    results = []
    # miss (hook, compiles); hit (wrapper); hit needing b's default (hook); keyword (hook)
    for i, (args, kwargs) in enumerate([((1, 2), {}), ((1, 2), {}), ((1,), {}), ((1,), {"b": 2})]):
        events.clear()
        sys.setprofile(profiler)
        try:
            results.append(call(*args, **kwargs))
        finally:
            sys.setprofile(None)
        assert events == (["__call__", "f"] if i == 0 else ["f"]), events  # the recorder on the miss
    assert results == [("R", 1, 2), ("R", 1, 2), ("R", 1, 5), ("R", 1, 2)]
    assert recorder.count(original.__code__) == 1
    assert _frame.stats()["cache_hits"] == 3 and _frame.miss_count(original.__code__) == 1


def test_captured_call_guards_see_the_arguments_and_a_failing_guard_reaches_the_callback():
    def f(a, b):
        def inner():
            return a  # `a` is a cell: a raw value in its slot until the frame runs
        return inner() + b

    def tagged(a, b):
        def inner():
            return a
        return ("R", inner() + b)

    seen = []

    def guard(info):
        seen.append(dict(info.f_locals))
        return info.f_locals["a"] == 1

    _frame.add_entry(f, tagged.__code__, guard)
    recorder = Recorder()
    call = _frame.CapturedCall(f, recorder, Recorder())
    assert call(1, 2) == ("R", 3)  # the guard passes on the wrapper's own lookup
    assert seen[-1] == {"a": 1, "b": 2} and recorder.count(f.__code__) == 0
    assert call(2, 2) == 4  # fails: the hook looks again and asks the callback (None: run f)
    assert recorder.count(f.__code__) == 1


def test_captured_call_binds_as_a_method_and_is_collected():
    class Holder:
        def method(self, x):
            return (self, x)

    Holder.method = _frame.CapturedCall(Holder.method, Recorder(), Recorder())
    holder = Holder()
    assert holder.method(5) == (holder, 5)
    assert copy.deepcopy(Holder.method) is Holder.method is copy.copy(Holder.method)
    call = _frame.CapturedCall(lambda: None, Recorder(), Recorder())
    call.self_reference = call  # a cycle through its __dict__
    ref = weakref.ref(call)
    del call
    gc.collect()
    assert ref() is None


def test_captured_call_without_a_callback_runs_with_capture_off_and_puts_the_callback_back():
    log, outer = [], Recorder()
    probe = _probe(log)
    call = _frame.CapturedCall(probe, None, None)
    with _frame.hooked(outer):
        assert call(2) == 2
        assert _frame.get_callback() is outer
        with pytest.raises(ValueError, match="negative"):
            call(-1)
        assert _frame.get_callback() is outer
    assert log == [None, None] and probe.__code__ not in outer.seen
    with pytest.raises(TypeError, match="three callables"):
        _frame.CapturedCall(probe, Recorder(), None)
