"""A graph op that raises only when it runs (an index out of range, which fake tensors cannot
see) inside try/except: eagerly the handler runs; compiled, the graph is called where the
trace ends, outside the try block, and the exception escapes it (seed 0, programs 1, 21,
24, 117, ...)."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"
FUZZ_KNOWN_BUG = ("an exception raised by a graph op at run time is not raised at the op's place in the "
                  "program: a try block around the op does not catch it")

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
