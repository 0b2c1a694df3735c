"""Turning capture on and off around user code: the Python side of the frame hook.

Capture is a per-thread setting of the C++ frame hook (`bytegraph._frame`): while a thread's
callback is set, every Python frame that thread starts is offered to the callback on a cache
miss. The objects here set the callback for exactly the span of user code they wrap:

- `CaptureContext(callback)`: a decorator and a context manager; `callback=None` disables.
- `disable(fn)`: run `fn` (and everything it calls) with capture off.

A compiled function's wrapper is the hook's `CapturedCall`, which does what
`call_with_callback` does without a Python frame. Entering a capturing span also starts a new
module generation for torch's `GenerationTracker` once torch._dynamo is loaded, as
torch.compile's contexts do (CUDA graph trees and torch's own tests read it).
"""

import functools
import inspect
import threading

from bytegraph import _frame
from bytegraph import config as _config
from bytegraph import stance as _stance

_config.observe("verify_correctness", _frame.set_verify_correctness)

# Attribute set on functions that capture must never enter; the tracer checks it by name.
DISABLE_MARK = "_bytegraph_disable"

def frame_hook():
    """The frame-hook module, `bytegraph._frame` (the C++ hook's Python face)."""
    return _frame


def _forced_eager():
    return _stance.current().name == "force_eager"


def call_with_callback(callback, fn, args, kwargs):
    """Call fn(*args, **kwargs) with the thread's frame callback set to `callback` (to None
    under set_stance("force_eager"): nothing compiled, no compiled entry used)."""
    if callback is not None:
        _frame.new_module_generation()
        if _forced_eager():
            callback = None
    previous = _frame.set_callback(callback)
    try:
        return fn(*args, **kwargs)
    finally:
        _frame.set_callback(previous)


class CaptureContext:
    """Sets the thread's frame callback around a call, or around a `with` block.

    As a decorator it returns a wrapper with the wrapped function's metadata; as a context
    manager it may be entered again, nested or from several threads (each thread keeps its
    own stack of callbacks to restore).
    """

    def __init__(self, callback):
        self.callback = callback
        self._saved = threading.local()

    def __enter__(self):
        if not hasattr(self._saved, "stack"):
            self._saved.stack = []
        callback = self.callback
        if callback is not None:
            _frame.new_module_generation()
            if _forced_eager():
                callback = None
        self._saved.stack.append(_frame.set_callback(callback))
        return self

    def __exit__(self, *exc_info):
        _frame.set_callback(self._saved.stack.pop())
        return False

    def __call__(self, fn):
        if not callable(fn):
            raise TypeError(f"expected a function to wrap, got {type(fn).__name__}")
        if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn):
            # A wrapper that returns the generator would restore the callback before the
            # body runs; the body is captured when iterated inside a capturing region.
            return fn
        callback = self.callback
        if callback is None:  # capture off: DisableContext's wrapper
            @functools.wraps(fn)
            def captured(*args, **kwargs):
                return call_with_callback(None, fn, args, kwargs)
        else:
            def verified(*args, **kwargs):  # while config.verify_correctness is on
                from bytegraph import _verify

                return _verify.call_verified(functools.partial(call_with_callback, callback),
                                             functools.partial(call_with_callback, None), fn, args, kwargs)

            # The hook's own callable: a call runs no Python frame of bytegraph's (a cache hit's
            # whole cost is the guards and the compiled code).
            captured = functools.update_wrapper(_frame.CapturedCall(fn, callback, verified), fn)
        captured._bytegraph_context = self
        return captured


class DisableContext(CaptureContext):
    """Capture off: the frames run by the wrapped code are never offered to a callback."""

    def __init__(self):
        super().__init__(None)

    def __call__(self, fn):
        wrapper = super().__call__(fn)
        if wrapper is not fn:
            setattr(wrapper, DISABLE_MARK, True)
        return wrapper


_skipped_codes = set()


def is_skipped_code(code):
    """True for code marked by `disable(fn, recursive=False)`."""
    return code in _skipped_codes


def _mark_skipped(code):
    _skipped_codes.add(code)
    _frame.mark_skip(code)


def disable(fn=None, recursive=True):
    """Never capture `fn`.

    recursive=True (the default): `fn` and every function it calls run with capture off; the
    returned wrapper is marked so that a trace reaching it runs it as an opaque call.
    recursive=False: only `fn`'s own frame is skipped; functions it calls are still captured.
    Returns the wrapper (or `fn` itself when recursive=False). `disable()` with no function
    returns a context manager and decorator; `disable(recursive=False)` a decorator.
    """
    if fn is None:
        if not recursive:
            # @disable(recursive=False): a decorator (torch.compiler.disable's meaning too).
            return functools.partial(disable, recursive=False)
        return DisableContext()
    import torch

    if isinstance(fn, torch.nn.Module):
        # Replace this instance's forward only; the module object stays the same.
        fn.forward = disable(fn.forward, recursive=recursive)
        return fn
    if not callable(fn):
        raise TypeError(f"bytegraph.disable expects a function or nn.Module, got {type(fn).__name__}")
    if recursive:
        return DisableContext()(fn)
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        raise TypeError(f"disable(recursive=False) needs a Python function, got {fn!r}")
    _mark_skipped(code)
    return fn
