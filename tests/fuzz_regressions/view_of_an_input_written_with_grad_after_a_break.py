"""A view of an input (t0 = a[-1]) taken before the input is written in place with a value
that requires grad (a *= net(a)) cannot be copied as a fake tensor: torch's meta converter
finds requires_grad differ. The write comes after a side effect (self.calls += 1), so the
trace breaks there and the view is an input of the resume function, whose compile failed with
an internal error (seed 2, program 543). Such an input is now a graph break
(`unfakeable_tensor`): the resume function runs eagerly."""

FUZZ_BACKENDS = ('eager',)
FUZZ_VERDICT = 'internal'

import torch
F = 4


class Box:

    def __init__(self, scale, flag):
        pass


class Net(torch.nn.Module):

    def __init__(self, features):
        super().__init__()
        self.linear = torch.nn.Linear(features, features)
        self.register_buffer('offset', torch.linspace(-1, 1, features))
        self.calls = 0
        self.gain = 0.5

    def forward(self, t):
        self.calls += 1
        return (torch.tanh(self.linear(t.to(self.linear.weight.dtype))) * self.gain + self.offset).to(t.dtype)


net = Net(F)


def fn(a, b, c, box):
    t0 = a[-1]
    a *= net(a)
    return t0


VARIANTS = [(3, torch.float32, 1.0, 2, True)]


def make_inputs(variant):
    batch, dtype, sign, n, flag = VARIANTS[variant]
    generator = torch.Generator().manual_seed(variant)

    def tensor(*shape):
        values = torch.randn(shape, generator=generator) * sign
        return values.to(dtype).requires_grad_(False)
    return ((tensor(batch, F), tensor(F), tensor(F), Box(1.0 + 0.5 * variant, flag)), {})
