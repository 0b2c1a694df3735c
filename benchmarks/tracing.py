"""Tracing time: a cold first call with the "eager" backend, less one eager call.

With the eager backend the compiled graph runs the same ops as eager mode, so what a cold
call costs beyond an eager call is capture: bytecode analysis, tracing, guards, codegen.
Each repetition starts from an empty cache (bytegraph.reset() / torch._dynamo.reset());
one untimed repetition first pays the one-time imports and warm-ups of each system.
"""

import torch

from benchmarks.timing import clock, median


def eager_seconds(fn, args, kwargs, *, calls=20):
    """Median time of one eager call (after a warm-up call)."""
    times = []
    with torch.no_grad():
        fn(*args, **kwargs)
        for _ in range(calls):
            start = clock()
            fn(*args, **kwargs)
            times.append(clock() - start)
    return median(times)


def _cold_call_seconds(compile_fn, reset, fn, args, kwargs, repeats):
    times = []
    for _ in range(repeats + 1):  # the first one is the untimed warm-up
        reset()
        compiled = compile_fn(fn)
        with torch.no_grad():
            start = clock()
            compiled(*args, **kwargs)
            times.append(clock() - start)
    reset()
    return median(times[1:])


def torch_cold_call_seconds(fn, args, kwargs, repeats):
    return _cold_call_seconds(lambda f: torch.compile(f, backend="eager"), torch._dynamo.reset,
                              fn, args, kwargs, repeats)


def bytegraph_cold_call_seconds(fn, args, kwargs, repeats):
    import bytegraph

    return _cold_call_seconds(lambda f: bytegraph.compile(f, backend="eager"), bytegraph.reset,
                              fn, args, kwargs, repeats)


def trace_only_seconds(fn, args, kwargs, repeats):
    """bytegraph's tracer alone (bytegraph._C.trace.trace): median seconds and the last result.

    Raises the tracer's Unsupported when the frame breaks.
    """
    from bytegraph._C import trace as _trace

    times = []
    result = None
    with torch.no_grad():
        for _ in range(repeats + 1):
            start = clock()
            result = _trace.trace(fn, tuple(args), dict(kwargs))
            times.append(clock() - start)
    return median(times[1:]), result
