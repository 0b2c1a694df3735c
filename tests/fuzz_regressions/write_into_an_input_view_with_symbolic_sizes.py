"""An in-place write into a view of an input whose sizes became symbolic (the batch size
changed), under aot_eager: asking whether the write aliases an input read the fakes'
storages, and the storage size of a fake with symbolic sizes is a new symbolic expression,
which AOTAutograd then failed to trace ("s0 is not tracked with proxy"; seed 1, program
2096). The tracer now compares fakes with torch._C._is_alias_of."""

FUZZ_BACKENDS = ('aot_eager',)
FUZZ_VERDICT = 'internal'

import torch
F = 3


def fn(a, b, c, n, flag, *rest):
    a[:, 1:] *= 2


VARIANTS = [(3, torch.float32, 1.0, 2, True), (2, torch.float32, 1.0, 4, False), (1, torch.float32, 1.0, 2, True)]


def make_inputs(variant):
    batch, dtype, sign, n, flag = VARIANTS[variant]
    generator = torch.Generator().manual_seed(variant)

    def tensor(*shape):
        values = torch.randn(shape, generator=generator) * sign
        return values.to(dtype).requires_grad_(False)
    return ((tensor(batch, F), tensor(), tensor(batch, F), n, flag) + (tensor(), tensor()), {})
