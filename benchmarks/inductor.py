"""Inductor on CPU: first-call latency and steady-state time of one system on one model.

Each (model, system) runs in its own process with its own empty TORCHINDUCTOR_CACHE_DIR
(benchmarks.run sees to it), so neither system reuses kernels the other compiled, from disk
or from memory. Inductor's own modules are imported before the clock starts, since the
first system measured in a process would otherwise pay for them.
"""

import torch

from benchmarks.timing import clock, median


def _compile(system, fn):
    if system == "bytegraph":
        import bytegraph

        return bytegraph.compile(fn, backend="inductor")
    return torch.compile(fn, backend="inductor")


def measure(system, fn, args, kwargs, *, calls=50, batches=5):
    import torch._inductor.compile_fx  # noqa: F401  (import cost is not compile latency)

    from bytegraph.testing import same

    with torch.no_grad():
        expected = fn(*args, **kwargs)
        eager = []
        for _ in range(batches):
            start = clock()
            for _ in range(calls):
                fn(*args, **kwargs)
            eager.append((clock() - start) / calls)
        compiled = _compile(system, fn)
        start = clock()
        result = compiled(*args, **kwargs)
        first_call = clock() - start
        steady = []
        for _ in range(batches):
            start = clock()
            for _ in range(calls):
                compiled(*args, **kwargs)
            steady.append((clock() - start) / calls)
    return {
        "first_call_s": first_call,
        "steady_s": median(steady),
        "eager_s": median(eager),
        "matches_eager": bool(same(expected, result, rtol=1e-3, atol=1e-4)),
    }
