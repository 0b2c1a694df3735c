"""aot_eager: an input that reaches only graph outputs the loss does not use gets a zero
gradient, where eager leaves its .grad None: AOTAutograd backpropagates through the whole
graph with zeros for the unused outputs (torch.compile(backend="aot_eager") does the same;
seed 0, program 100)."""

FUZZ_BACKENDS = ("aot_eager",)
FUZZ_VERDICT = "wrong"
FUZZ_KNOWN_BUG = ("AOTAutograd gives a zero gradient to an input whose outputs are not backpropagated, where "
                  "eager leaves .grad None (also under torch.compile)")

import torch

linear = torch.nn.Linear(4, 4)


def fn(a, c):
    t = torch.sin(c) * 2
    h = linear(a)
    print("a graph break: h is an output of the first graph")
    return t, bool(h.sum() > 0)


VARIANTS = [0]


def make_inputs(variant):
    return (torch.randn(3, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)), {}
