"""A graph that writes into an input cannot be run again when one of its ops fails at run
time (the write would happen twice), so generated code lets the error propagate from the
graph call, and the side effects the program made before the failing op (here the append to
LOG), which generated code writes after the graph returns, are lost (seed 2, programs 1071
and 1201). torch.compile does the same."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"
FUZZ_KNOWN_BUG = ("a graph that writes into an input and fails at run time drops the side effects the program "
                  "made before the failing op")

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
