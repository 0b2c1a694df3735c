"""On 3.13, code generated for a frame with more than 16 locals (a resume function after a
graph break, here) copies 3.13's paired local instructions (LOAD_FAST_LOAD_FAST,
STORE_FAST_STORE_FAST), whose two local indices have 4 bits each: a local past slot 15 cannot
be encoded and compiling failed with an internal error (seed 0, programs 23, 30, 33, 164).
Assembling now splits such a pair into its two single-local instructions."""

FUZZ_BACKENDS = ('eager',)
FUZZ_VERDICT = 'internal'

import torch
F = 4


class Box:

    def __init__(self, scale, flag):
        self.scale = scale
        self.flag = flag


class Net(torch.nn.Module):

    def __init__(self, features):
        super().__init__()

    def forward(self, t):
        pass


def combine(*tensors, scale=1.0, **extras):
    out = tensors[0] * scale
    return out


shared_box = Box(1.5, True)
net = Net(F)


def fn(a, b, n):
    print('p0', a.dim(), type(a).__name__, bool(a.sum() > 0), end=';\n')
    if shared_box.flag and bool(b.mean() < 0):
        pass
    else:
        try:
            pass
        except NameError as error:
            pass
    lst10 = [a[i] * i for i in range(a.shape[0])]
    if b.requires_grad:
        d11 = {'c': torch.mul(a, shared_box.scale), 'd': a.new_zeros(a.shape[0], F), 'b': a.sin()}
        h12 = net(a)
    else:
        acc13 = 0.0
        for name, value in net.named_buffers():
            pass
    t14 = combine(torch.arange(a.shape[0]).float().unsqueeze(1), *lst10, scale=n)
    t20 = torch.where(t14 > a, t14, a)


VARIANTS = [(3, torch.float32, 1.0, 2, True)]


def make_inputs(variant):
    batch, dtype, sign, n, flag = VARIANTS[variant]
    generator = torch.Generator().manual_seed(variant)

    def tensor(*shape):
        values = torch.randn(shape, generator=generator) * sign
        return values.to(dtype).requires_grad_(True)
    return ((tensor(batch, F), tensor(), n), {})
