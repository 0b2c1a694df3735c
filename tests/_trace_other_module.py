"""A module other than the traced function's, for globals read by inlined helpers."""

import torch

BIAS = torch.arange(3.0)
SCALE = 2


def helper(x):
    return x * SCALE + BIAS

COUNT = 0


def bump(x):
    global COUNT
    COUNT += 1
    return x * SCALE
