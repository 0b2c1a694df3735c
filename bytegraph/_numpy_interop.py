"""NumPy code on tensors inside traced frames (`x.numpy()`, `np.mean(a)`, `a.T`, `a + a`).

An array made from a tensor stays a tensor in the graph. Each NumPy operation on it becomes one
call_function node whose target is a `NumpyOp`: it sees its tensor arguments as arrays of
`torch._numpy` (NumPy's API written with torch operations, so fake tensors and every backend
trace through it), applies the function, method, attribute or operator, and hands tensors back.
The tracer imports this module on the first NumPy operation it meets.
"""

import numpy as np
import torch
import torch._numpy as tnp
from torch.utils._pytree import tree_map_only

# NumPy's namespaces that torch._numpy mirrors, by module name.
# numpy.random is not: torch._numpy's generator is not NumPy's (a trace would draw other numbers).
_MIRRORED = {"numpy": tnp, "numpy.fft": tnp.fft, "numpy.linalg": tnp.linalg}


def _as_arrays(tree):
    return tree_map_only(torch.Tensor, tnp.ndarray, tree)


def _as_tensors(tree):
    return tree_map_only(tnp.ndarray, lambda array: array.tensor, tree)


class NumpyOp:
    """A graph node's target: `what` of torch._numpy on arrays made from its tensor arguments;
    the arrays of the result become tensors again."""

    def __init__(self, kind, name, apply):
        self.kind = kind
        self.__name__ = self.__qualname__ = f"numpy_{kind}_{name}".replace(".", "_")
        self._apply = apply

    def __call__(self, *args, **kwargs):
        args, kwargs = _as_arrays((args, kwargs))
        return _as_tensors(self._apply(*args, **kwargs))

    def __repr__(self):
        return self.__name__

    def __reduce__(self):  # graphs are pickled by some backends' caches: rebuilt by name
        return (_target_by_name, (self.__name__,))


_TARGETS = {}


def _target(kind, name, apply):
    key = f"numpy_{kind}_{name}".replace(".", "_")
    found = _TARGETS.get(key)
    if found is None:
        found = _TARGETS[key] = NumpyOp(kind, name, apply)
    return found


def _target_by_name(name):
    return _TARGETS[name]


def function_target(fn):
    """The target for calling NumPy's `fn` (np.mean, np.fft.fft), or None where torch._numpy has
    no such function."""
    module = _MIRRORED.get(getattr(fn, "__module__", None) or "")
    name = getattr(fn, "__name__", None)
    if name is None:
        return None
    if module is None:
        # np.mean reports numpy as its module; some report a private one (numpy._core...).
        for module_name, mirror in _MIRRORED.items():
            namespace = np if module_name == "numpy" else getattr(np, module_name.split(".")[1], None)
            if namespace is not None and getattr(namespace, name, None) is fn:
                module = mirror
                break
    replacement = getattr(module, name, None) if module is not None else None
    if not callable(replacement):
        return None
    return _target("function", f"{module.__name__.removeprefix('torch._numpy')}.{name}".lstrip("."), replacement)


def method_target(name):
    """The target for `array.name(...)`."""
    if not callable(getattr(tnp.ndarray, name, None)):
        return None
    return _target("method", name, lambda array, *args, **kwargs: getattr(array, name)(*args, **kwargs))


def attribute_target(name):
    """The target for reading `array.name` (T, real, imag: arrays computed from the tensor)."""
    if not isinstance(getattr(tnp.ndarray, name, None), property):
        return None
    return _target("attribute", name, lambda array: getattr(array, name))


def operator_target(function):
    """The target for an operator (operator.add) with an array operand."""
    return _target("operator", function.__name__, function)


def dtype_of(tensor_dtype):
    """NumPy's dtype for a tensor's dtype (array.dtype)."""
    return np.dtype(tnp.dtype(tensor_dtype).name)


def is_numpy_callable(obj):
    """Whether `obj` is one of NumPy's functions (dispatchers and ufuncs included)."""
    if isinstance(obj, np.ufunc):
        return True
    module = getattr(obj, "__module__", None) or ""
    return callable(obj) and not isinstance(obj, type) and (module == "numpy" or module.startswith("numpy."))


def from_numpy_functions():
    """torch's functions that turn an array into a tensor sharing its data."""
    return (torch.from_numpy, torch.as_tensor, torch.asarray)


def to_numpy(tensor):
    """What generated code calls on a graph output that the frame returns as an array."""
    return tensor.numpy()

