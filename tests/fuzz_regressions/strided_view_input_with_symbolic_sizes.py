"""`a[:, 0] += 1` after a global write breaks at the write (it comes after a side effect), and
the resume function gets `a` and its column `a[:, 0]` as inputs. Once sizes turned dynamic,
the column's fake got its stride (the base's row length) as a symbol of its own, which no graph
input carries, and aot_eager failed: "s2 is not tracked with proxy" (seed 1, program 932).
Such a stride symbol is now a graph input of its own (read from `x.stride()[0]`)."""

FUZZ_BACKENDS = ('aot_eager',)
FUZZ_VERDICT = 'internal'

import torch
F = 4


class Box:

    def __init__(self, scale, flag):
        pass


COUNT = 0


def fn(a, c, flag, box, *rest):
    global COUNT
    COUNT += 1
    a[:, 0] += 1


VARIANTS = [(3, torch.float32, 1.0, 2, True), (2, torch.float32, 1.0, 4, False)]


def make_inputs(variant):
    batch, dtype, sign, n, flag = VARIANTS[variant]
    generator = torch.Generator().manual_seed(variant)

    def tensor(*shape):
        values = torch.randn(shape, generator=generator) * sign
        return values.to(dtype).requires_grad_(False)
    return ((tensor(batch, F), tensor(), flag, Box(1.0 + 0.5 * variant, flag)) + (tensor(F), tensor(F)), {})
