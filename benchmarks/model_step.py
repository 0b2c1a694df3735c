"""One step of a model in a mode, and the comparison of two runs of the same steps.

A mode is "eval" (inference: `module.eval()`, the call under `torch.no_grad()`) or "train"
(a training step: `module.train()`, the forward call, a scalar loss made from its floating
outputs, `loss.backward()` run eagerly). A step records what a compiled run must reproduce:
the outputs (flattened to `path -> value`), in training the parameters' gradients, and the
buffers after the call (BatchNorm's running statistics change in training).
"""

import collections.abc

import torch

MODES = ("eval", "train")

# The counting backends run the captured graphs eagerly, kernel for kernel: differences
# beyond float noise are wrong results.
RTOL = 1e-4
ATOL = 1e-5


def flatten(value, path="out"):
    """[(path, leaf)] of a model's output: tensors, numbers, strings and None as they are;
    other objects (cache objects) by their type's name."""
    if isinstance(value, torch.Tensor):
        return [(path, value)]
    if isinstance(value, collections.abc.Mapping):  # dicts and transformers' ModelOutput
        return [leaf for key, item in value.items() for leaf in flatten(item, f"{path}.{key}")]
    if isinstance(value, (tuple, list)):
        return [leaf for i, item in enumerate(value) for leaf in flatten(item, f"{path}[{i}]")]
    if value is None or isinstance(value, (bool, int, float, str)):
        return [(path, value)]
    return [(path, f"<{type(value).__qualname__}>")]


def loss_of(output):
    """A scalar that depends on every floating output that carries a gradient."""
    terms = [leaf.float().pow(2).mean() for _, leaf in flatten(output)
             if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.requires_grad]
    if not terms:
        raise RuntimeError("no output carries a gradient: nothing to run backward on")
    return torch.stack(terms).sum()


def _snapshot(leaves):
    return [(path, leaf.detach().clone() if isinstance(leaf, torch.Tensor) else leaf) for path, leaf in leaves]


def step(call, module, mode, args, kwargs, seed=0):
    """Runs one step of `call` (the module itself, or a compiled version of it) on `module`'s
    parameters; returns {"outputs", "grads", "buffers"} as lists of (name, value)."""
    module.train(mode == "train")
    for parameter in module.parameters():
        parameter.grad = None
    torch.manual_seed(seed)
    if mode == "eval":
        with torch.no_grad():
            output = call(*args, **kwargs)
        grads = []
    else:
        output = call(*args, **kwargs)
        loss_of(output).backward()
        grads = [(name, None if p.grad is None else p.grad.detach().clone()) for name, p in module.named_parameters()]
    return {
        "outputs": _snapshot(flatten(output)),
        "grads": grads,
        "buffers": _snapshot(list(module.named_buffers())),
    }


def same_inputs_again(args, kwargs, seed):
    """New inputs with the shapes, dtypes and value ranges of `args`/`kwargs`: a second call
    that must hit the compiled code without recompiling."""
    generator = torch.Generator().manual_seed(seed)

    def like(value):
        if isinstance(value, torch.Tensor):
            if value.is_floating_point():
                return torch.randn(value.shape, generator=generator, dtype=value.dtype)
            if value.dtype == torch.bool:
                return value.clone()
            high = int(value.max()) + 1 if value.numel() else 1
            return torch.randint(0, max(high, 1), value.shape, generator=generator, dtype=value.dtype)
        if isinstance(value, (tuple, list)):
            return type(value)(like(item) for item in value)
        if isinstance(value, dict):
            return {key: like(item) for key, item in value.items()}
        return value

    return like(args), like(kwargs)


def _same_leaf(expected, actual):
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return f"a tensor became {type(actual).__name__}"
        if expected.shape != actual.shape or expected.dtype != actual.dtype:
            return f"{tuple(expected.shape)} {expected.dtype} became {tuple(actual.shape)} {actual.dtype}"
        if expected.is_floating_point():
            if torch.allclose(expected, actual, rtol=RTOL, atol=ATOL, equal_nan=True):
                return None
            return f"max abs difference {(expected - actual).abs().max().item():.3g}"
        return None if torch.equal(expected, actual) else "values differ"
    return None if expected == actual and type(expected) is type(actual) else f"{expected!r} became {actual!r}"


def differences(expected, actual):
    """How `actual` (a step's record) differs from `expected`: a list of short texts."""
    found = []
    for part in ("outputs", "grads", "buffers"):
        want, got = expected[part], actual[part]
        if [name for name, _ in want] != [name for name, _ in got]:
            found.append(f"{part}: structure {[n for n, _ in want][:6]} became {[n for n, _ in got][:6]}")
            continue
        for (name, a), (_, b) in zip(want, got):
            if (a is None) != (b is None):
                found.append(f"{part} {name}: {'missing' if b is None else 'unexpected'}")
            elif a is not None:
                why = _same_leaf(a, b)
                if why:
                    found.append(f"{part} {name}: {why}")
    return found
