"""Side effects traced before a graph op that raises when it runs were lost: generated code
replays them after the graph returns, and it never returned (seed 0, program 248; seed 1,
program 3). Generated code now runs the original code when its graph raises, side effects
and all (bytegraph/_graph_failure.py)."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"

import torch

LOG = []


def fn(a):
    LOG.append(len(LOG))
    b = a * 2
    return b[torch.tensor([30])] + 1


VARIANTS = [0, 1]


def make_inputs(variant):
    return (torch.randn(3, 4),), {}
