"""Cache-hit overhead: what a call of an already compiled tiny function costs beyond eager.

Functions of 1, 2 and 8 tensors, compiled with the "eager" backend, called in a loop once
their cache entry exists: time per call minus the eager function's time per call is the
guard check, the frame hook and the generated call code. The floor is the time of a call
of an empty Python function with the same arguments (the least any call can cost).
"""

import torch

from benchmarks.timing import median, per_call_seconds


def one_tensor(a):
    return a + 1


def two_tensors(a, b):
    return a + b


def eight_tensors(a, b, c, d, e, f, g, h):
    return a + b + c + d + e + f + g + h


def empty_one(a):
    pass


def empty_two(a, b):
    pass


def empty_eight(a, b, c, d, e, f, g, h):
    pass


FUNCTIONS = [(1, one_tensor, empty_one), (2, two_tensors, empty_two), (8, eight_tensors, empty_eight)]


def measure(*, calls=2000, batches=7):
    """Rows per arity: seconds per call of eager, empty, bytegraph and torch.compile."""
    import bytegraph

    rows = []
    for arity, fn, empty in FUNCTIONS:
        args = tuple(torch.randn(4) for _ in range(arity))
        bytegraph.reset()
        torch._dynamo.reset()
        ours = bytegraph.compile(fn, backend="eager")
        theirs = torch.compile(fn, backend="eager")
        for compiled in (ours, theirs):  # compile now; also check the result once
            torch.testing.assert_close(compiled(*args), fn(*args))
        if not bytegraph._frame.cache_entries(fn.__code__):
            raise RuntimeError(f"{fn.__name__} was not captured: its timing would be eager's, not a cache hit's")
        timed = {}
        # Interleaved batches, so that a change in machine load hits every variant alike.
        for _ in range(batches):
            for name, variant in (("eager", fn), ("empty", empty), ("bytegraph", ours), ("torch", theirs)):
                timed.setdefault(name, []).append(per_call_seconds(variant, args, calls=calls, batches=1))
        medians = {name: median(values) for name, values in timed.items()}
        rows.append({
            "tensors": arity,
            "eager_s": medians["eager"],
            "empty_call_s": medians["empty"],
            "bytegraph_s": medians["bytegraph"],
            "torch_s": medians["torch"],
            "bytegraph_overhead_s": medians["bytegraph"] - medians["eager"],
            "torch_overhead_s": medians["torch"] - medians["eager"],
        })
        bytegraph.reset()
        torch._dynamo.reset()
    return rows
