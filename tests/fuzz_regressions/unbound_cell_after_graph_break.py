"""A cell variable read while unbound after a graph break raised NameError ("free
variable") instead of UnboundLocalError: in the resume function the cell is a free
variable (seed 0, programs 7, 11, 45, 113, ...). Fixed: the resume function's reads of the
original's cells raise UnboundLocalError, as the original does."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"

import torch


def fn(a):
    if a.sum() > 0:  # a graph break: the rest runs in a resume function
        cell = a + 1

    def read():
        return cell

    for reader in (read, lambda: cell):
        try:
            a = a * reader().sum()
        except NameError as error:
            print(type(error).__name__)
    try:
        a = a * cell.sum()
    except NameError as error:
        print(type(error).__name__)
    return a * 2


VARIANTS = [1.0, -1.0]


def make_inputs(variant):
    return (torch.ones(3) * VARIANTS[variant],), {}
