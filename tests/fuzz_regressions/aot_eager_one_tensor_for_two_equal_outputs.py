"""aot_eager: two graph outputs computed the same way come back as one tensor object where
eager makes two (a later in-place write to one would change the other);
torch.compile(backend="aot_eager") does the same (seed 1, program 5883)."""

FUZZ_BACKENDS = ("aot_eager",)
FUZZ_VERDICT = "wrong"
FUZZ_KNOWN_BUG = "AOTAutograd returns one tensor for equal outputs that eager computes as two (also under torch.compile)"

import torch


def fn(a, items):
    for _ in range(2):
        items += [torch.max(a, dim=-1, keepdim=True).values]
    return items


VARIANTS = [0]


def make_inputs(variant):
    return (torch.randn(3, 4, requires_grad=True), []), {}
