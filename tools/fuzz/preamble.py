"""The module-level code every generated program starts with: the classes, helper functions
and globals its function under test may use. The shrinker drops whatever a failing program
does not need."""

import textwrap

IMPORTS = """\
import functools

import torch
"""

FEATURES = "F = {features}\n"

CLASSES = '''
class FuzzError(Exception):
    pass


class Box:
    """A user object: attributes read, written and added by the program."""

    def __init__(self, scale, flag):
        self.scale = scale
        self.flag = flag
        self.count = 0
        self.items = []

    def scaled(self, t):
        return t * self.scale

    def bump(self, step=1):
        self.count += step
        return self.count

    @property
    def double_scale(self):
        return self.scale * 2


class Net(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = torch.nn.Linear(features, features)
        self.register_buffer("offset", torch.linspace(-1, 1, features))
        self.calls = 0
        self.gain = 0.5

    def forward(self, t):
        self.calls += 1
        # float64 inputs are computed in the weights' dtype and returned in their own.
        return (torch.tanh(self.linear(t.to(self.linear.weight.dtype))) * self.gain + self.offset).to(t.dtype)
'''

HELPERS = '''
def combine(*tensors, scale=1.0, **extras):
    out = tensors[0] * scale
    for t in tensors[1:]:
        out = out + t
    for name in sorted(extras):
        out = out + extras[name]
    return out


def scaled_items(tensors, factor):
    for index, t in enumerate(tensors):
        yield t * (factor + index)


def apply_twice(function, t):
    return function(function(t))


def count_calls():
    global COUNT
    COUNT += 1
    return COUNT


def first_positive(*values, default=None):
    for value in values:
        if value.sum() > 0:
            return value
    return default
'''

GLOBALS = """
STATE = {"calls": 0}
LOG = []
COUNT = 0
shared_box = Box(1.5, True)
net = Net(F)
"""


def render(features):
    parts = [IMPORTS, FEATURES.format(features=features), CLASSES, HELPERS, GLOBALS]
    return "\n\n".join(textwrap.dedent(p).strip("\n") + "\n" for p in parts)
