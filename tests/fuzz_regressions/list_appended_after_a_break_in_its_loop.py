"""A list appended to by the body of a loop over it, after a graph break inside the loop:
the resume function continued over a snapshot of the remaining items, so the appended ones
were not reached. It now gets the list and the loop's index, and continues with the list's own
iterator (bytegraph/_bridge.py list_iterator_at)."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"

import torch


def fn(a, items):
    for item in items:
        if item.sum() > 0:  # a graph break inside the loop
            a = a + 1
        if len(items) < 5:
            items.append(item * 0.5)
    return torch.stack(items).sum(0) + a


VARIANTS = [0]


def make_inputs(variant):
    return (torch.ones(2), [torch.ones(2), torch.ones(2)]), {}
