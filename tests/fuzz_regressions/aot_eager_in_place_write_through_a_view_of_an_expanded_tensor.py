"""aot_eager: an in-place write through a view (diagonal) of an expanded tensor works in
eager mode (the view's elements do not overlap), but AOTAutograd's functionalization writes
it back into the expanded base (an input of the graph) and fails ("more than one element of the written-to tensor
refers to a single memory location"); torch.compile(backend="aot_eager") fails too (seed 1,
program 7054)."""

FUZZ_BACKENDS = ("aot_eager",)
FUZZ_VERDICT = "internal"
FUZZ_KNOWN_BUG = ("AOTAutograd cannot write in place through a view of an expanded tensor that eager writes "
                  "(also under torch.compile)")

import torch


def fn(c):
    a = c.expand(-1, 4)
    print("a graph break: the expanded tensor is an input of the next graph")
    diagonal = a.diagonal()
    diagonal.mul_(-1)
    return c + 1


VARIANTS = [0]


def make_inputs(variant):
    return (torch.randn(4, 1),), {}
