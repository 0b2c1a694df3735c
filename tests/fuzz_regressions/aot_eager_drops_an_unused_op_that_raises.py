"""aot_eager: an op whose result is never used, and that raises when run (F.linear of a
float64 input with float32 weights, which fake tensors let through), raises in eager mode;
AOTAutograd removes it as dead code, so the compiled call raises nothing
(torch.compile(backend="aot_eager") does the same). The counting backends run every node
and raise like eager (seed 0, program 109)."""

FUZZ_BACKENDS = ("eager", "aot_eager")
FUZZ_VERDICT = "wrong"
FUZZ_KNOWN_BUG = "AOTAutograd drops an unused op that would raise when run (also under torch.compile)"

import torch

linear = torch.nn.Linear(3, 3)


def fn(a):
    unused = torch.nn.functional.linear(a, linear.weight, linear.bias)
    return a * 2


VARIANTS = [0]


def make_inputs(variant):
    return (torch.randn(3, 3, dtype=torch.float64, requires_grad=True),), {}
