"""Like strided_view_input_with_symbolic_sizes.py, with a matrix of one row: its column has
one element, so it counted as dense and stayed symbolic, and its stride (4, not 1) became a
symbol no graph input carries; aot_eager failed (seed 1, program 9754). A stride or storage
offset that is a symbol of its own is now a graph input, as in torch.compile."""

FUZZ_BACKENDS = ('aot_eager',)
FUZZ_VERDICT = 'internal'

import torch
F = 4


class Box:

    def __init__(self, scale, flag):
        pass

    @property
    def double_scale(self):
        pass


class Net(torch.nn.Module):

    def __init__(self, features):
        super().__init__()


shared_box = Box(1.5, True)
net = Net(F)


def fn(a, c, items):
    net.gain = shared_box.double_scale
    c[:, 0] += 1


VARIANTS = [(3, torch.float32, 1.0, 2, True), (1, torch.float32, 1.0, 2, True)]


def make_inputs(variant):
    batch, dtype, sign, n, flag = VARIANTS[variant]
    generator = torch.Generator().manual_seed(variant)

    def tensor(*shape):
        values = torch.randn(shape, generator=generator) * sign
        return values.to(dtype).requires_grad_(False)
    return ((tensor(batch, F), tensor(batch, F), [tensor(), tensor()]), {})
