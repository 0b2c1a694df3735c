"""An attribute set and then deleted in the same trace, on an object that did not have it:
generated code replayed the deletion with delattr(), which raised AttributeError (seed 1,
program 1703). Fixed: the replay deletes the instance attribute if it is there."""

FUZZ_BACKENDS = ("eager", "dynamic")
FUZZ_VERDICT = "wrong"

import torch


class Box:
    def __init__(self):
        self.count = 0


box = Box()


def fn(a):
    box.extra = a * 2
    box.count += 1
    del box.extra
    box.kept = a + 1
    del box.count
    return a + 1


VARIANTS = [0, 1]


def make_inputs(variant):
    return (torch.randn(2 + variant, 3),), {}
