"""The same unbound cell read, in a resume function that is traced and breaks again (at a
print before the read): the read happens in generated code, which must raise
UnboundLocalError too (that resume function then runs as it is)."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"

import torch


def fn(a):
    b = a + 1
    print("before")

    def read():
        return late

    try:
        b = b * late
    except NameError as error:
        print(type(error).__name__)
    late = 2
    return b + read()


VARIANTS = [0]


def make_inputs(variant):
    return (torch.ones(3),), {}
