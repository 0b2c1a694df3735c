"""The trace's guards, built into the guard tree, accept the traced call's frame and reject
changes the trace depended on: every source the tracer names must be readable by the tree."""

import builtins

import torch
import torch.nn as nn

from tests._trace_helpers import trace


def check_frame(result, fn, slots, closure=None):
    tree = result.guard_set.build()
    return tree.check_locals(slots, fn.__globals__, builtins.__dict__, closure)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return torch.relu(self.fc(x))


def test_module_guards_accept_the_frame_and_reject_shape_and_mode_changes():
    net = Net()
    x = torch.randn(3, 4)
    result = trace(net, x)
    forward = Net.forward
    assert check_frame(result, forward, [net, x])
    assert check_frame(result, forward, [net, torch.randn(3, 4)])
    assert not check_frame(result, forward, [net, torch.randn(5, 4)])
    assert not check_frame(result, forward, [Net(), x])
    net.eval()
    assert not check_frame(result, forward, [net, x])


def test_constant_list_and_closure_guards():
    k = 3

    def f(x, n, xs):
        return x * n * k + xs[1]

    x, xs = torch.ones(2), [torch.ones(2), torch.zeros(2)]
    result = trace(f, x, 5, xs)
    assert check_frame(result, f, [x, 5, xs], f.__closure__)
    assert not check_frame(result, f, [x, 6, xs], f.__closure__)
    assert not check_frame(result, f, [x, 5, xs + [torch.ones(2)]], f.__closure__)
    k = 4  # noqa: F841  (the cell changes)
    assert not check_frame(result, f, [x, 5, xs], f.__closure__)


def test_guards_on_globals_of_helpers_in_other_modules():
    from tests import _trace_other_module as other

    def f(x):
        return other.helper(x)

    x = torch.ones(3)
    result = trace(f, x)
    assert check_frame(result, f, [x], f.__closure__)
    saved = other.SCALE
    try:
        other.SCALE = 7
        assert not check_frame(result, f, [x], f.__closure__)
    finally:
        other.SCALE = saved
