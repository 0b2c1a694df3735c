"""A list appended to (or inserted into) while a for loop walks it: the loop sees the new
items in eager mode, while the trace iterated over a snapshot of the items (seed 0, program
278). Fixed: iterators over lists (plain and enumerate) read the list at each step."""

FUZZ_BACKENDS = ("eager", "dynamic")
FUZZ_VERDICT = "wrong"

import torch


def fn(a, items):
    for item in items:
        if len(items) < 5:
            items.append(item * 0.5)
    for index, item in enumerate(items):
        if index < 2:
            items.insert(0, item + 1)
    return torch.stack(items).sum(0) + a, len(items)


VARIANTS = [0, 1]


def make_inputs(variant):
    return (torch.ones(2), [torch.ones(2) * (variant + 1), torch.ones(2)]), {}
