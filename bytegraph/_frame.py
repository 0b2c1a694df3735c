"""Internal API of the PEP 523 frame hook (the C++ side is `bytegraph._C.frame`).

Per thread, a callback decides what happens to frames bytegraph has not seen before:

    def callback(frame_info):  # f_code, f_globals, f_builtins, f_locals, function
        return None                      # run the frame unmodified (ask again next call)
        return code                      # run `code` instead, for every later call too
        return (code, guard_fn)          # ... only while guard_fn(frame_info) is true
        return (code, guard_fn, keep)    # ... and keep `keep` alive as long as the entry

The replacement code must keep the original's argument names (in order), co_freevars and
co_cellvars, and its MAKE_CELL/COPY_FREE_VARS prefix. While the callback or a Python guard
runs, the hook is off for that thread, so the Python they call is not intercepted.
"""

from __future__ import annotations

import contextlib
from types import CodeType
from typing import Any, Callable, Iterator, Optional

from bytegraph._extension import _C

_frame = _C.frame

# Errors meant for the user (a backend that raised, a break under fullgraph=True) reach the
# caller; any other compile failure falls back to running the frame unmodified.
from bytegraph.exc import BytegraphError  # noqa: E402

_frame.set_propagated_error_type(BytegraphError)

Callback = Callable[[Any], Any]

__all__ = [
    "hooked",
    "set_callback",
    "get_callback",
    "mark_skip",
    "mark_run_only",
    "is_skipped",
    "mark_own_code",
    "is_our_code",
    "cache_entries",
    "add_entry",
    "clear_cache",
    "miss_count",
    "reset",
    "stats",
    "reset_stats",
    "raise_on_compile_error",
    "CapturedCall",
    "set_forced_eager",
    "set_verify_correctness",
    "new_module_generation",
]

# CapturedCall(fn, callback, verified_call): calls fn with `callback` as this thread's frame
# callback and puts back the previous one (what bytegraph.compile returns for a function).
CapturedCall = _frame.CapturedCall


def set_forced_eager(forced: bool) -> None:
    """set_stance("force_eager") is in force: CapturedCall runs its function with no callback."""
    _frame.set_forced_eager(forced)


def new_module_generation() -> None:
    """Starts a new torch GenerationTracker generation once torch._dynamo is loaded (each
    capturing span does, as torch.compile's contexts do)."""
    _frame.new_module_generation()


def set_verify_correctness(verify: bool) -> None:
    """config.verify_correctness: CapturedCall calls go through their `verified_call`."""
    _frame.set_verify_correctness(verify)


def set_callback(callback: Optional[Callback]) -> Optional[Callback]:
    """Sets this thread's frame callback (None turns the hook off here); returns the previous."""
    return _frame.set_callback(callback)


def get_callback() -> Optional[Callback]:
    return _frame.get_callback()


@contextlib.contextmanager
def hooked(callback: Optional[Callback]) -> Iterator[None]:
    """Runs the body with `callback` as this thread's frame callback; nestable, and the
    previous callback is restored on every way out of the block."""
    previous = _frame.set_callback(callback)
    try:
        yield
    finally:
        _frame.set_callback(previous)


def mark_skip(code: CodeType) -> None:
    """Frames of `code` always run unmodified from now on (until reset())."""
    _frame.mark_skip(code)


def mark_run_only(code: CodeType) -> None:
    """Frames of `code` are served by their cache entries only; a miss runs the frame, and the
    functions it calls, unmodified (a code past its recompile limit; until reset())."""
    _frame.mark_run_only(code)


def is_skipped(code: CodeType) -> bool:
    return _frame.is_skipped(code)


def mark_own_code(code: CodeType) -> None:
    """Marks `code` as made by bytegraph: the hook never intercepts its frames."""
    _frame.mark_own_code(code)


def is_our_code(code: CodeType) -> bool:
    return _frame.is_own_code(code)


def cache_entries(code: CodeType) -> list[dict]:
    """The cache entries of `code`, most recently used first: dicts with `code` (the
    replacement), `function` (what a hit calls), `guards` (descriptions, [] for none),
    `has_guards` and `keepalive`."""
    return _frame.cache_entries(code)


def add_entry(function, code: CodeType, guard_fn=None, keepalive=None) -> None:
    """Adds an entry for `function.__code__` directly (what the hook does after a callback
    returned `(code, guard_fn, keepalive)`). Raises ValueError if `code` does not keep the
    original's argument names, co_freevars and co_cellvars."""
    _frame.add_entry(function, code, guard_fn, keepalive)


def clear_cache(code: CodeType) -> None:
    _frame.clear_cache(code)


def miss_count(code: CodeType) -> int:
    return _frame.miss_count(code)


def reset() -> int:
    """Drops every cache entry of every code object bytegraph has touched, and the skip
    marks; returns how many entries were dropped."""
    return _frame.reset()


def stats() -> dict:
    return _frame.stats()


def reset_stats() -> None:
    _frame.reset_stats()


@contextlib.contextmanager
def raise_on_compile_error(enabled: bool = True) -> Iterator[None]:
    """While active, an exception from the callback propagates out of the intercepted call
    instead of being logged (the default logs once per code and runs the frame unmodified)."""
    previous = _frame.raise_on_compile_error()
    _frame.set_raise_on_compile_error(enabled)
    try:
        yield
    finally:
        _frame.set_raise_on_compile_error(previous)
