"""A dict grown by the loop that iterates over it raises RuntimeError ("dictionary changed
size during iteration"); the trace iterated over a snapshot of its keys and raised nothing.
Fixed: a loop step over a dict whose size changed is run for real (the helper below runs
as it is, the rest of fn is captured)."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"

import torch


def grow(d, value):
    try:
        for key in d:
            d[key + "x"] = value
    except RuntimeError as error:
        print(type(error).__name__)


def fn(a, d):
    b = a * 2
    grow(d, b)
    for key, value in d.items():
        b = b + value
    return b, sorted(d)


VARIANTS = [0]


def make_inputs(variant):
    return (torch.ones(3), {"a": torch.ones(3)}), {}
