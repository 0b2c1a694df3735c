"""The public entry points: compile, optimize, reset, list_backends, disable, graph_break.

`compile` has the shape of torch.compile and `optimize` that of torch._dynamo.optimize. Both
resolve the backend once, build the frame callback (`_convert_frame.FrameConverter`) and
install it around the user's code (`eval_frame.CaptureContext`).
"""

import torch

from bytegraph import _compile_metrics, _convert_frame, _fake_cache, _stack_names, _structured_trace, backends, config
from bytegraph.eval_frame import CaptureContext, disable, frame_hook
from bytegraph.optimized_module import OptimizedModule

__all__ = ["compile", "optimize", "reset", "list_backends", "disable", "graph_break", "compile_times",
           "set_trace_dir"]

compile_times = _compile_metrics.compile_times
set_trace_dir = _structured_trace.set_trace_dir


def _check_type(name, value, expected, expected_text):
    if not isinstance(value, expected):
        raise TypeError(f"{name} must be {expected_text}, got {type(value).__name__} ({value!r})")


def _check_backend_argument(backend):
    if not isinstance(backend, str) and not callable(backend):
        raise TypeError(
            "backend must be a backend name (see bytegraph.list_backends()) or a callable "
            f"(gm, example_inputs) -> callable, got {type(backend).__name__}"
        )


def _recompile_module(module, compile_options):
    """What unpickling an OptimizedModule calls: the module compiled again, with its options."""
    return compile(module, **compile_options)


class _NullContext:
    """What optimize(disable=True) returns: a decorator and context manager that do nothing."""

    def __call__(self, fn):
        return fn

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


class OptimizeContext(CaptureContext):
    """A compile callback installed around user code; wraps nn.Modules as OptimizedModule."""

    def __init__(self, callback, compile_options):
        super().__init__(callback)
        self.compile_options = compile_options

    def __call__(self, fn):
        if isinstance(fn, OptimizedModule):
            fn = fn._orig_mod
        if isinstance(fn, torch.nn.Module):
            return OptimizedModule(fn, super().__call__(fn.__call__), self.compile_options, rebuild=_recompile_module)
        if not callable(fn):
            raise TypeError(f"expected a function or nn.Module to compile, got {type(fn).__name__}")
        return super().__call__(fn)


def _optimize_context(backend, capture, compile_options, *, mode=None, options=None):
    """The capture context for `backend` (with inductor's mode/options) and `capture`, a
    CaptureOptions; `compile_options` are the call's own arguments, to compile it again."""
    compiler_fn = backends.resolve_backend(backend, mode=mode, options=options, dynamic=capture.dynamic)
    key = backends.backend_key(backend, mode=mode, options=options)
    return OptimizeContext(_convert_frame.FrameConverter(compiler_fn, capture, backend_key=key), compile_options)


def compile(
    model=None,
    *,
    backend="inductor",
    fullgraph=False,
    dynamic=None,
    mode=None,
    options=None,
    disable=False,
    recompile_limit=None,
):
    """Compile a function or nn.Module, like torch.compile.

    model: the function or module; when omitted, returns a decorator.
    backend: a name from `list_backends()` or a callable `(gm, example_inputs) -> callable`.
    fullgraph: raise on a graph break instead of splitting the function.
    dynamic: None (sizes become dynamic after a recompile), True or False.
    mode / options: inductor settings, as torch.compile takes them; other backends receive
        them as keyword arguments and must accept them.
    disable: return `model` unchanged.
    recompile_limit: compiled entries kept per function before it runs eagerly (default:
        config.cache_size_limit).
    Returns an OptimizedModule for a module, a wrapper with the function's metadata otherwise.
    """
    _check_backend_argument(backend)
    _check_type("fullgraph", fullgraph, bool, "a bool")
    _check_type("disable", disable, bool, "a bool")
    if dynamic is not None:
        _check_type("dynamic", dynamic, bool, "a bool or None")
    if recompile_limit is not None and (type(recompile_limit) is not int or recompile_limit < 1):
        raise ValueError(f"recompile_limit must be a positive int or None, got {recompile_limit!r}")
    compile_options = dict(
        backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode, options=options, disable=disable,
        recompile_limit=recompile_limit,
    )
    if model is None:
        # Validate now so a bad argument fails at the decorator, not at the first call.
        backends.resolve_backend(backend, mode=mode, options=options, dynamic=dynamic)

        def decorate(fn):
            if fn is None:
                raise TypeError("bytegraph.compile: the model to compile cannot be None")
            return compile(fn, **compile_options)

        return decorate
    if not callable(model):
        raise TypeError(f"bytegraph.compile expects a function or nn.Module, got {type(model).__name__}")
    capture = _convert_frame.CaptureOptions(fullgraph=fullgraph, dynamic=dynamic, recompile_limit=recompile_limit)
    context = _optimize_context(backend, capture, compile_options, mode=mode, options=options)
    if disable or config.disable:
        return model
    return context(model)


def optimize(
    backend="inductor",
    *,
    nopython=False,
    guard_export_fn=None,
    guard_fail_fn=None,
    disable=False,
    dynamic=None,
):
    """A decorator and context manager that captures with `backend`, like torch._dynamo.optimize.

    As a decorator it compiles the function (or module); inside `with optimize(...):` every
    function called from the block is captured.
    nopython: a graph break is an error (torch.compile's fullgraph).
    guard_export_fn(guards) is called for each new cache entry; guard_fail_fn(failure) when a
    cached entry's guards fail, with a GuardFail(reason, orig_code) as torch._dynamo passes.
    """
    _check_backend_argument(backend)
    _check_type("nopython", nopython, bool, "a bool")
    _check_type("disable", disable, bool, "a bool")
    if dynamic is not None:
        _check_type("dynamic", dynamic, bool, "a bool or None")
    for name, hook in (("guard_export_fn", guard_export_fn), ("guard_fail_fn", guard_fail_fn)):
        if hook is not None and not callable(hook):
            raise TypeError(f"{name} must be callable or None, got {type(hook).__name__}")
    capture = _convert_frame.CaptureOptions(
        fullgraph=nopython, dynamic=dynamic, guard_export_fn=guard_export_fn, guard_fail_fn=guard_fail_fn)
    context = _optimize_context(backend, capture, dict(backend=backend, fullgraph=nopython, dynamic=dynamic))
    if disable or config.disable:
        return _NullContext()
    return context


def reset():
    """Forget everything compiled: every code object's cache entries and compile-time state."""
    frame_hook().reset()
    _convert_frame.reset()
    _stack_names.reset()
    _compile_metrics.reset()
    _fake_cache.clear()


def list_backends(exclude_tags=("debug", "experimental")):
    """Sorted backend names for `backend=`; see bytegraph.backends.list_backends."""
    return backends.list_backends(exclude_tags=exclude_tags)


def graph_break():
    """Force a graph break here when captured; does nothing when run eagerly.

    The tracer recognises this function by identity.
    """


# The mark the torch bridge's classify() looks for (bytegraph/_classify.py).
graph_break._bytegraph_graph_break = True
