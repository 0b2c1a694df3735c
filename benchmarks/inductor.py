"""Inductor on CPU: first-call latency and steady-state time, bytegraph vs torch.compile.

First calls: each (model, system) runs in its own process with its own empty
TORCHINDUCTOR_CACHE_DIR (benchmarks.run sees to it), so neither system reuses kernels the
other compiled, from disk or from memory. Inductor's own modules are imported before the
clock starts, since the first system measured in a process would otherwise pay for them.

Steady state: measured in bytegraph's process after its first call, with torch.compile's
version compiled there too (untimed), eager, torch.compile and bytegraph timed in
interleaved batches: on a shared machine, load changes between processes are larger than
the differences measured.
"""

import torch

from benchmarks.timing import clock, median


def compile_with(system, fn):
    if system == "bytegraph":
        import bytegraph

        return bytegraph.compile(fn, backend="inductor")
    return torch.compile(fn, backend="inductor")


def first_call(system, fn, args, kwargs):
    """(seconds of the first call of the compiled fn, whether it matches eager, compiled fn)."""
    import torch._inductor.compile_fx  # noqa: F401  (import cost is not compile latency)

    from bytegraph.testing import same

    with torch.no_grad():
        expected = fn(*args, **kwargs)
        compiled = compile_with(system, fn)
        start = clock()
        result = compiled(*args, **kwargs)
        seconds = clock() - start
    return seconds, bool(same(expected, result, rtol=1e-3, atol=1e-4)), compiled


def steady_state(variants, args, kwargs, *, calls=50, batches=15):
    """{name: median over interleaved batches of the mean seconds per call}."""
    times = {name: [] for name in variants}
    with torch.no_grad():
        for fn in variants.values():
            fn(*args, **kwargs)
        for _ in range(batches):
            for name, fn in variants.items():
                start = clock()
                for _ in range(calls):
                    fn(*args, **kwargs)
                times[name].append((clock() - start) / calls)
    return {name: median(values) for name, values in times.items()}


def measure(system, fn, args, kwargs, *, calls=50, batches=15):
    seconds, matches, compiled = first_call(system, fn, args, kwargs)
    result = {"first_call_s": seconds, "matches_eager": matches}
    if system == "bytegraph":
        _, torch_matches, theirs = first_call("torch", fn, args, kwargs)
        steady = steady_state({"eager": fn, "torch": theirs, "bytegraph": compiled}, args, kwargs,
                              calls=calls, batches=batches)
        result["steady"] = {f"{name}_s": value for name, value in steady.items()}
    return result
