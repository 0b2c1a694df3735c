"""A graph that writes in place to an input, compiled by aot_eager while that input was a
view of another input (`fn(a, a[0])`), then called with inputs that do not alias (same
shapes, so the guards pass): the functionalized write landed in the other input and the
written one kept its values (seed 1, program 9080). Fixed: graphs that write in place check
the inputs' aliasing on each call and run the captured graph as it is when it changed."""

FUZZ_BACKENDS = ("aot_eager", "eager")
FUZZ_VERDICT = "wrong"

import torch


def fn(a, t):
    t.zero_()
    return a.sum() + t.sum()


VARIANTS = ["aliased", "separate", "aliased"]


def make_inputs(variant):
    a = torch.ones(3, 4)
    if VARIANTS[variant] == "aliased":
        return (a, a[0]), {}
    return (a, torch.ones(4)), {}
