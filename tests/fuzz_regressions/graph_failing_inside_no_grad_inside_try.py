"""An index out of range inside a no_grad block inside try: the whole frame is one graph,
which raises at run time after switching grad mode off, and the original code then ran from
its start with the mode still off, so it stayed off after the call (seed 3, program 735).
The failure handler now restarts the frame in the mode it was entered with, and a graph that
switches the mode puts it back when it raises."""

FUZZ_BACKENDS = ('eager',)
FUZZ_VERDICT = 'wrong'

import torch
F = 3


def fn(a, b, c):
    mx5 = torch.max(a, dim=-1, keepdim=True)
    t6 = mx5[0]
    with torch.no_grad():
        try:
            t9 = t6[torch.tensor([F * 10])] + 1
        except IndexError:
            pass


VARIANTS = [(3, torch.float32, 1.0, 2, True)]


def make_inputs(variant):
    batch, dtype, sign, n, flag = VARIANTS[variant]
    generator = torch.Generator().manual_seed(variant)

    def tensor(*shape):
        values = torch.randn(shape, generator=generator) * sign
        return values.to(dtype).requires_grad_(False)
    return ((tensor(batch, F), tensor(F), tensor(batch, 1)), {})
