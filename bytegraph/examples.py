"""The seeds' examples, as the demo, the tests and the benchmarks use them."""

import torch
import torch.nn.functional as F
from torch import nn


def add(x, y):
    """The frame-evaluation walkthrough's first function."""
    return x + y


def slides_example(a, b):
    """The function whose interpreter steps the slides drew by hand."""
    a0 = 0
    a1 = 1
    a2 = 2
    a3 = a0 + a1 + a2
    if a.sum() > a3:
        return a + b + a3
    return a - b


class Net(nn.Module):
    """The notebook's model: one Linear and a relu."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        x = self.fc(x)
        x = F.relu(x)
        return x


def foo1(a, b):
    x = a + b
    if b.sum() < 0:
        x = x * -1
    return x


def foo2(a, b):
    x = a + b
    if b.sum() < 0:
        x = x * -1
    if a.sum() < 0:
        x = x * -2
    x = 2 * x
    return x
