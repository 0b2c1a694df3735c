"""What a call did, as plain data that can be kept and compared with another run's.

`snapshot(value)` turns results and state (arguments after the call, globals, objects,
modules) into tuples, lists and detached tensor copies. Identity is part of it: the second
time an object is reached it is recorded as a reference to the first, so a compiled
function that returns a copy where the original returned its input (or the list it also
stored) differs. `difference(eager, compiled)` says where two snapshots differ, or None.
"""

import math

import torch

# Floating-point results may differ by kernel choice (a decomposition, a fused op).
RTOL = 1.3e-4
ATOL = 1e-5

_ATOMS = (type(None), bool, int, str, bytes, torch.dtype, torch.device)


class _Memo:
    """Objects already recorded, numbered in the order reached (kept alive so ids stay unique)."""

    def __init__(self):
        self.numbers = {}
        self.kept = []

    def number(self, value):
        return self.numbers.get(id(value))

    def add(self, value):
        self.numbers[id(value)] = len(self.kept)
        self.kept.append(value)


def snapshot(value, memo=None):
    memo = _Memo() if memo is None else memo
    if isinstance(value, _ATOMS):
        return ("atom", type(value).__name__, value)
    if isinstance(value, float):
        return ("float", value)
    if isinstance(value, torch.Size):
        return ("size", tuple(value))
    if isinstance(value, tuple):
        return ("tuple", type(value).__qualname__, [snapshot(v, memo) for v in value])
    if memo.number(value) is not None:
        return ("ref", memo.number(value))
    memo.add(value)
    if isinstance(value, torch.Tensor):
        return _tensor(value, memo)
    if isinstance(value, list):
        return ("list", [snapshot(v, memo) for v in value])
    if isinstance(value, dict):
        return ("dict", type(value).__qualname__, [(snapshot(k, memo), snapshot(v, memo)) for k, v in value.items()])
    if isinstance(value, torch.nn.Module):
        return _module(value, memo)
    if callable(value) or not hasattr(value, "__dict__"):
        return ("opaque", type(value).__qualname__)
    return ("object", type(value).__qualname__, snapshot(dict(vars(value)), memo))


def _tensor(t, memo):
    grad = t.grad if t.is_leaf and t.requires_grad else None
    return ("tensor", str(t.dtype), tuple(t.shape), t.requires_grad, t.detach().clone(),
            None if grad is None else snapshot(grad, memo))


def _module(module, memo):
    state = {k: v for k, v in vars(module).items() if not k.startswith("_")}
    tensors = dict(module.named_parameters())
    tensors.update(module.named_buffers())
    return ("module", type(module).__qualname__, snapshot(state, memo), snapshot(tensors, memo))


def difference(eager, compiled, path="value"):
    """Where two snapshots differ ("value[1].scale: 2.0 != 3.0"), or None if they agree."""
    if eager[0] != compiled[0]:
        return f"{path}: {_short(eager)} != {_short(compiled)}"
    kind = eager[0]
    if kind == "float":
        return None if _floats_match(eager[1], compiled[1]) else f"{path}: {eager[1]!r} != {compiled[1]!r}"
    if kind == "tensor":
        return _tensor_difference(eager, compiled, path)
    if kind in ("atom", "size", "ref", "opaque"):
        same = eager == compiled and (kind != "atom" or type(eager[2]) is type(compiled[2]))
        return None if same else f"{path}: {_short(eager)} != {_short(compiled)}"
    if kind in ("tuple", "dict", "object", "module") and eager[1] != compiled[1]:
        return f"{path}: type {eager[1]} != {compiled[1]}"
    if kind in ("tuple", "list", "dict"):
        return _items_difference(eager[-1], compiled[-1], path, kind == "dict")
    if kind == "object":
        return difference(eager[2], compiled[2], f"{path}.__dict__")
    if kind == "module":
        return difference(eager[2], compiled[2], f"{path}.__dict__") or difference(eager[3], compiled[3], f"{path}.tensors")
    raise AssertionError(f"unknown snapshot kind {kind!r}")


def _items_difference(eager, compiled, path, keyed):
    if len(eager) != len(compiled):
        return f"{path}: length {len(eager)} != {len(compiled)}"
    for i, (a, b) in enumerate(zip(eager, compiled)):
        if keyed:
            found = difference(a[0], b[0], f"{path}.keys()[{i}]") or difference(a[1], b[1], f"{path}[{_key(a[0])}]")
        else:
            found = difference(a, b, f"{path}[{i}]")
        if found:
            return found
    return None


def _tensor_difference(eager, compiled, path):
    _, dtype, shape, requires_grad, values, grad = eager
    _, dtype2, shape2, requires_grad2, values2, grad2 = compiled
    if (dtype, shape, requires_grad) != (dtype2, shape2, requires_grad2):
        return f"{path}: tensor {dtype} {list(shape)} requires_grad={requires_grad} != {dtype2} {list(shape2)} requires_grad={requires_grad2}"
    if not _values_match(values, values2):
        return f"{path}: values differ (max abs difference {_max_difference(values, values2)})"
    if (grad is None) != (grad2 is None):
        return f"{path}.grad: {'None' if grad is None else 'a tensor'} != {'None' if grad2 is None else 'a tensor'}"
    return None if grad is None else difference(grad, grad2, f"{path}.grad")


def _values_match(a, b):
    if a.is_floating_point() or a.is_complex():
        return bool(torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True))
    return bool(torch.equal(a, b))


def _max_difference(a, b):
    try:
        return float((a.double() - b.double()).abs().nan_to_num(nan=float("inf")).max())
    except RuntimeError:
        return "?"


def _floats_match(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ATOL + RTOL * abs(a)


def _key(snap):
    return repr(snap[2]) if snap[0] == "atom" else "?"


def _short(snap, limit=120):
    text = repr(snap)
    return text if len(text) <= limit else text[:limit] + "..."
