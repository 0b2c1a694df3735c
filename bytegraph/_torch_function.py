"""What the tracer needs to know about `__torch_function__` (csrc/trace/values/torch_function.h):
which tensor classes take part in dispatch, which callable an operation hands to an override
as `func`, and which results torch.Tensor's own override leaves unconverted."""

from __future__ import annotations

import functools
import operator

import torch
from torch.overrides import get_default_nowrap_functions

DEFAULT = torch.Tensor.__torch_function__.__func__  # the function under the classmethod
PARAMETER = torch.nn.Parameter
_DISABLED = torch._C._disabled_torch_function_impl


def _handler(cls):
    handler = getattr(cls, "__torch_function__", None)
    return getattr(handler, "__func__", handler)


def dispatches(cls) -> bool:
    """Whether the tracer dispatches __torch_function__ for a tensor of class `cls`: a subclass
    whose override is not disabled (as nn.Parameter's is). A traceable wrapper subclass
    (`__tensor_flatten__`: NestedTensor) is an exception, as in torch.compile: its override is
    part of the op, run on its fake while tracing and on the tensor when the graph runs, so
    the graph holds the op as the program called it."""
    return cls is not torch.Tensor and _handler(cls) is not _DISABLED and not hasattr(cls, "__tensor_flatten__")


def runs_with_op(cls) -> bool:
    """Whether a tensor of class `cls` has an override the tracer leaves to the op: a traceable
    wrapper subclass's own __torch_function__ (NestedTensor's), which must then run, in the
    graph as in eager, with subclass dispatch on."""
    return (cls is not torch.Tensor and hasattr(cls, "__tensor_flatten__")
            and _handler(cls) not in (_DISABLED, DEFAULT))


def dispatched_callable(kind, target, first_is_tensor):
    """The `func` eager hands to __torch_function__ for a recorded op: the Tensor method for
    `x.name(...)`, what the operator's Tensor slot hands on for an operator on a tensor
    (`x + y` is Tensor.add, `x // y` Tensor.__floordiv__), else the function called (also for
    a reflected operator, `2 - x`, whose operands it keeps in order)."""
    if kind == "call_method":
        return getattr(torch.Tensor, target)
    if first_is_tensor and getattr(operator, getattr(target, "__name__", ""), None) is target:
        return _operator_callable(target) or target
    return target


@functools.cache
def _operator_callable(op):
    """What eager hands to __torch_function__ for operator function `op` on a tensor, found by
    applying it once to a probe subclass (torch's own choice, which varies by operator)."""
    seen = []

    class Probe(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **(kwargs or {}))

    ones = torch.ones(2, 2, dtype=torch.long)
    for operands in ((ones,), (), (ones, 1)):  # binary, unary, then setitem-like
        probe = torch.tensor([[1, 2], [3, 4]]).as_subclass(Probe)
        seen.clear()
        try:
            op(probe, *operands)
        except TypeError:
            continue
        except Exception:
            return None
        return seen[0] if seen else None
    return None


def leaves_unconverted(func) -> bool:
    """Whether torch.Tensor.__torch_function__ returns func's result as it is (no as_subclass)."""
    try:
        return func in get_default_nowrap_functions()
    except TypeError:  # unhashable
        return False


def _plain(values):
    return [torch.Tensor.as_subclass(value, torch.Tensor)
            if isinstance(value, torch.Tensor) and dispatches(type(value)) else value
            for value in values]


def plain_inputs(example_inputs):
    """The graph's inputs with tensors of dispatching subclasses as plain tensors (aliases
    sharing their data and autograd history): the graph's ops are the overrides' results
    already, and a backend must see tensors it knows."""
    with torch._C.DisableTorchFunctionSubclass():  # as_subclass itself would dispatch
        return _plain(example_inputs)


def without_subclass_dispatch(compiled):
    """`compiled` given plain tensors and run with subclass dispatch off, as the trace ran the
    ops it holds."""

    def run(*args):
        with torch._C.DisableTorchFunctionSubclass():
            return compiled(*_plain(args))

    run.__wrapped__ = compiled
    return run
