"""A graph op that raises only when it runs (an index out of range, which fake tensors cannot
see) inside try/except: eagerly the handler runs; compiled, the graph was called where the
trace ends, outside the try block, and the exception escaped it (seed 0, programs 1, 21,
24, 117, ...). Generated code now runs the original code when its graph raises
(bytegraph/_graph_failure.py)."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"

import torch

LOG = []


def fn(a):
    b = a * 2
    try:
        b = b[torch.tensor([30])] + 1
    except IndexError:
        LOG.append("index error")
    return b


VARIANTS = [0]


def make_inputs(variant):
    return (torch.randn(3, 4),), {}
