"""A list appended to by the body of a loop over it, after a graph break inside the loop:
the resume function continues over a snapshot of the remaining items, so the appended ones
are not reached."""

FUZZ_BACKENDS = ("eager",)
FUZZ_VERDICT = "wrong"
FUZZ_KNOWN_BUG = ("a for loop over a list, resumed after a graph break in its body, iterates over a snapshot "
                  "of the list: items appended after the break are not reached")

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
