"""An input that does not require grad, written in place with a value that does (`b +=
linear(a)`), after a recompile with dynamic shapes: the aot_eager graph's other output came
back requiring grad. The backend re-faked the inputs in the trace's own fake mode, whose
fake of b the trace's in-place op had made require grad (seed 1, program 6584). Fixed: the
backend gets a new fake mode on the trace's ShapeEnv, as torch.compile does."""

FUZZ_BACKENDS = ("aot_eager",)
FUZZ_VERDICT = "wrong"

import torch

linear = torch.nn.Linear(4, 4)


def fn(a, b):
    a = a - b * a.sigmoid()
    b += linear(a)
    return a


VARIANTS = [3, 5, 7]


def make_inputs(variant):
    generator = torch.Generator().manual_seed(variant)
    return (torch.randn(VARIANTS[variant], 4, generator=generator), torch.randn(VARIANTS[variant], 4, generator=generator)), {}
