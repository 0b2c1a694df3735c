"""aot_eager: an input that does not require grad, written in place with a value that does
(`a *= linear(a)`), fails AOTAutograd's compile ("modified by an inplace operation") where
eager raises nothing until backward. torch.compile(backend="aot_eager") fails the same way:
a limitation of AOTAutograd, not of capture (seed 0, program 122)."""

FUZZ_BACKENDS = ("aot_eager",)
FUZZ_VERDICT = "internal"
FUZZ_KNOWN_BUG = ("AOTAutograd rejects an in-place write of a value that requires grad into an input that does "
                  "not (also under torch.compile)")

import torch

linear = torch.nn.Linear(3, 3)


def fn(a):
    a *= linear(a)
    return a.sum()


VARIANTS = [0]


def make_inputs(variant):
    return (torch.randn(5, 3),), {}
