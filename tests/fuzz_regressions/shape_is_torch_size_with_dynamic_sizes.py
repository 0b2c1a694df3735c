"""x.shape with symbolic sizes was a plain tuple: printed as (7, 4), returned and stored as
a tuple, and its slices and sums lost the type too (seed 0, programs 0, 7, 10, 14, ...).
Fixed: the tracer keeps torch.Size for x.shape / x.size() and what is made from them."""

FUZZ_BACKENDS = ("eager", "dynamic")
FUZZ_VERDICT = "wrong"

import torch

LOG = []


def fn(a):
    shape = a.shape
    print(shape, a.size(), shape[1:], shape + (1,), (1,) + shape[:1], shape * 2)
    LOG.append(a.size())
    return torch.zeros(shape) + a, shape, shape[-1:], type(shape).__name__


VARIANTS = [3, 5, 7, 3]


def make_inputs(variant):
    return (torch.randn(VARIANTS[variant], 4, generator=torch.Generator().manual_seed(variant)),), {}
