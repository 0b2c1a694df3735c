"""A graph that writes into an input cannot be run again when one of its ops fails at run
time (the write would happen twice), so its error propagates from the graph call; the side
effects the program made before the failing op (here the append to LOG), which generated code
makes after the graph returns, were lost (seed 2, programs 1071 and 1201). torch.compile does
the same. The trace now breaks so that in a graph holding such a write every tensor op comes
before every side effect (Tracer::keep_failures_recoverable)."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"

import torch

LOG = []


def fn(a):
    LOG.append(len(LOG))
    a[:, 0] += 1
    t = a * 2
    t -= t[0]  # fails when run: t[0] overlaps the written tensor
    return t


VARIANTS = [0]


def make_inputs(variant):
    return (torch.randn(3, 4),), {}
