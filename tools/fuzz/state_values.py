"""Values the state of a --mutate-state program starts with and is changed to, as source text:
numbers, tensors of the feature size F, and callables of each signature the programs call.

A change must change something the function sees, so `other(rng, pool, old)` picks a value
of the pool other than the old one. Tensors differ in values, shape (one that still
broadcasts against (batch, F)), dtype or requires_grad, since each is a guard of its own.
"""

NUMBERS = ("0.5", "1.5", "-2.0", "0.25", "3.0")
# Another number's type: what a guard on the value's type (or a constant folded as a float) misses.
OTHER_NUMBERS = ("2", "torch.tensor(2.0)", "True")

TENSORS = (
    "torch.full((F,), {n})", "torch.linspace(-1, 1, F) * {n}", "torch.arange(F) * {n}",
    "torch.ones(F) + {n}",
)
# The same values with something else changed: a size of one, another dtype, a gradient.
OTHER_TENSORS = (
    "torch.full((1,), {n})", "torch.linspace(-1, 1, F, dtype=torch.float64) * {n}",
    "torch.full((F,), {n}).requires_grad_()", "torch.tensor({n})",
)

# Callables of one tensor, shape kept. The pool holds builtins, Python functions, partials,
# a module instance, a method descriptor and a lambda: each is guarded differently.
UNARY = (
    "torch.relu", "torch.tanh", "torch.sigmoid", "torch.nn.functional.silu", "torch.nn.functional.gelu",
    "torch.neg", "torch.abs", "lambda t: t * 2.0", "functools.partial(torch.clamp, min=-0.5)",
    "functools.partial(torch.mul, other=3.0)", "torch.nn.Tanh()", "torch.Tensor.exp",
)
# Callables of two tensors.
BINARY = (
    "operator.add", "operator.mul", "operator.sub", "torch.add", "torch.maximum", "torch.mul",
    "functools.partial(torch.add, alpha=2.0)", "lambda x, y: x * 2.0 - y",
)
# Callables of a list of floats, giving a number.
REDUCERS = ("len", "sum", "max", "min", "functools.partial(sum, start=1.0)", "lambda items: items[0]")
# Types (and type-like callables) applied to a float.
CASTS = ("float", "int", "bool", "torch.tensor", "abs", "round")
# Tensor factories called with F.
FACTORIES = (
    "torch.zeros", "torch.ones", "torch.arange", "functools.partial(torch.full, (F,))",
    "functools.partial(torch.linspace, 0, 1)",
)

# Modules from F to F features: what a container gets or a submodule is replaced with.
MODULES = (
    "torch.nn.Linear(F, F)", "torch.nn.Sigmoid()", "torch.nn.GELU()", "torch.nn.Identity()",
    "torch.nn.LayerNorm(F)", "torch.nn.Linear(F, F, bias=False)", "torch.nn.Tanh()",
)


def other(rng, pool, old=None):
    """A value of the pool that is not `old`."""
    return rng.choice([value for value in pool if value != old])


def number(rng, old=None):
    return other(rng, NUMBERS, old)


def tensor(rng, changed_kind=False):
    """A tensor of F values; with changed_kind, one of another shape, dtype or requires_grad."""
    return rng.choice(OTHER_TENSORS if changed_kind else TENSORS).format(n=number(rng))
