"""Side effects traced before a graph op that raises when it runs are lost: generated code
replays them after the graph returns, and it never returns (seed 0, program 248; seed 1,
program 3)."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"
FUZZ_KNOWN_BUG = ("an exception raised by a graph op at run time drops the side effects (global and object "
                  "writes) the program made before the op")

import torch

LOG = []


def fn(a):
    LOG.append(len(LOG))
    b = a * 2
    return b[torch.tensor([30])] + 1


VARIANTS = [0, 1]


def make_inputs(variant):
    return (torch.randn(3, 4),), {}
