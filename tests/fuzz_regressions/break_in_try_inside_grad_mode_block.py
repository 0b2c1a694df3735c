"""A graph break inside a try block inside `with torch.enable_grad():` made codegen fail
with an internal error ("a grad-mode block's exit is entered again, not rebuilt"): generated
code re-enters grad-mode blocks only where their own cleanups are the only handlers around
the break (seed 2, program 142). Fixed: such a frame runs as it is (here the helper; fn is
captured around its call)."""

FUZZ_BACKENDS = ("eager", "dynamic")
FUZZ_VERDICT = "internal"

import torch


class FuzzError(Exception):
    pass


def helper(t):
    with torch.enable_grad():
        try:
            raise FuzzError("planned")  # a graph break (raising is not traced)
        except FuzzError:
            t = t + 1
    return t


def fn(a):
    b = a * 2
    return helper(b) + a


VARIANTS = [0, 1]


def make_inputs(variant):
    return (torch.randn(3 + variant, 4),), {}
