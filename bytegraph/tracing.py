"""`bytegraph.trace(fn, *args, **kwargs)`: what the symbolic interpreter did, step by step.

The function is compiled and run once with the interpreter's event stream (csrc/record/)
attached to this thread, so every trace made during that call reports to it: the original
frame, each inlined call (as a frame nested in its caller) and each resume function after
a graph break. The events are collected into the trace viewer's `Trace`
(bytegraph.viewer.model), which renders as an HTML page, beamer slides or org slides.
"""

from __future__ import annotations

import types

from bytegraph._extension import _C
from bytegraph.api import compile as compile_function
from bytegraph.viewer.events import EventAdapter
from bytegraph.viewer.model import Trace
from bytegraph.viewer.recorder import TraceRecorder


def _fresh_function(function: types.FunctionType) -> types.FunctionType:
    """A copy of `function` with a new code object: no cache entry, skip mark or resume
    function made for the original applies to it, so calling it really traces."""
    copy = types.FunctionType(
        function.__code__.replace(), function.__globals__, function.__name__, function.__defaults__,
        function.__closure__,
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__dict__.update(function.__dict__)
    return copy


def _fresh_callable(fn):
    if isinstance(fn, types.FunctionType):
        return _fresh_function(fn)
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return types.MethodType(_fresh_function(fn.__func__), fn.__self__)
    forward = getattr(type(fn), "forward", None)
    if isinstance(forward, types.FunctionType) and callable(fn):
        # An nn.Module: trace a fresh copy of its forward, bound to the module.
        return types.MethodType(_fresh_function(forward), fn)
    raise TypeError(
        f"bytegraph.trace needs a Python function, a method or an nn.Module, got {type(fn).__name__}"
    )


def trace(fn, *args, **kwargs) -> Trace:
    """Compile and run `fn(*args, **kwargs)` once, recording each step of the symbolic interpreter.

    Returns a `Trace`: `frames` lists every frame traced (the original, each resume function
    and each inlined call, nested), each with `name`, `code` and `steps`; each step has
    offset, opname, argrepr, line, source, stack, locals, graph (the nodes so far) and a note.
    `graphs` and `guards` hold what each trace produced, and `result` the call's return value.
    """
    fresh = _fresh_callable(fn)
    compiled = compile_function(fresh, backend="eager")
    recorder = TraceRecorder()
    _C.record.attach(EventAdapter(recorder))
    try:
        result = compiled(*args, **kwargs)
    finally:
        _C.record.detach()
    recorder.set_result(result)
    return recorder.trace()
