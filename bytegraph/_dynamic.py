"""Which sizes and ints a compile makes symbolic: `dynamic=`, automatic dynamic and marks.

- `dynamic=False`: static, except dimensions marked with `mark_dynamic`/`maybe_mark_dynamic`.
- `dynamic=True`: every size of every tensor input symbolic from the first compile (sizes 0 and 1
  stay static, and equal sizes share a symbol, as under torch.compile), and every int argument;
  a dimension seen to change gets a symbol of its own when it is compiled again.
- `dynamic=None` (automatic): the first compile is static. Each compile records, per code
  object, the sizes and ints its inputs had; a later compile makes symbolic exactly the
  dimensions and ints seen to change (`config.automatic_dynamic_shapes`). An int attribute of
  an object reached from the arguments (`self.step`) is symbolic only once seen to change.

Marks are the attributes torch.compile reads (`torch._dynamo.mark_dynamic` and friends set
them too): `_dynamo_dynamic_indices` (+ `_dynamo_dynamic_range`), `_dynamo_weak_dynamic_indices`,
`_dynamo_static_indices`. A static mark wins over everything else.
"""

from __future__ import annotations

import logging
import weakref

import torch

from bytegraph import config
from bytegraph._shape_spec import DimSpec

log = logging.getLogger("bytegraph.dynamic")

__all__ = ["mark_dynamic", "maybe_mark_dynamic", "mark_static", "mark_unbacked"]


# ---- marks ----------------------------------------------------------------------------------


def _dims(t, index, what):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what} expects a torch.Tensor, got {type(t).__name__}")
    indices = list(index) if isinstance(index, (list, tuple)) else [index]
    result = []
    for dim in indices:
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"{what}: a dimension must be an int, got {type(dim).__name__} ({dim!r})")
        if not -t.dim() <= dim < t.dim():
            raise IndexError(f"{what}: dimension {dim} is out of range for a tensor of {t.dim()} dimensions")
        result.append(dim % t.dim())
    return result


def mark_dynamic(t, index, *, min=None, max=None):
    """Compile dimension(s) `index` of tensor `t` with a symbolic size, from the first
    compile. Specialising it to one value while tracing is an error (use maybe_mark_dynamic
    to allow that). min/max bound the sizes the compiled code accepts (a call outside them
    recompiles). Recorded as torch.compile records it, so torch.compile honours it too."""
    dims = _dims(t, index, "mark_dynamic")
    for bound, name in ((min, "min"), (max, "max")):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 0):
            raise ValueError(f"mark_dynamic: {name} must be a non-negative int or None, got {bound!r}")
    if min is not None and max is not None and min > max:
        raise ValueError(f"mark_dynamic: min ({min}) is greater than max ({max})")
    from torch._dynamo import decorators

    for dim in dims:
        decorators.mark_dynamic(t, dim, min=min, max=max)


def maybe_mark_dynamic(t, index):
    """Like mark_dynamic, but the code may still specialise the dimension."""
    from torch._dynamo import decorators

    for dim in _dims(t, index, "maybe_mark_dynamic"):
        decorators.maybe_mark_dynamic(t, dim)


def mark_static(t, index):
    """Keep dimension(s) `index` of `t` static, whatever `dynamic=` or automatic dynamic say."""
    from torch._dynamo import decorators

    for dim in _dims(t, index, "mark_static"):
        decorators.mark_static(t, dim)


def mark_unbacked(t, index):
    """Compile dimension(s) `index` of `t` with an unbacked symbolic size: no guard on its
    value and no specialisation to 0 or 1, so every size reuses the compile; code that
    branches on it is a graph break (an error under fullgraph)."""
    from torch._dynamo import decorators

    for dim in _dims(t, index, "mark_unbacked"):
        decorators.mark_unbacked(t, dim)


def _marks(t):
    """(strict dynamic dims, weak dynamic dims, static dims, {dim: (min, max)}, unbacked dims)
    of a tensor."""
    strict = getattr(t, "_dynamo_dynamic_indices", None) or ()
    weak = set(getattr(t, "_dynamo_weak_dynamic_indices", None) or ())
    weak |= set(getattr(t, "_dynamo_propagated_dynamic_indices", None) or ())
    static = getattr(t, "_dynamo_static_indices", None) or ()
    ranges = {}
    for entry in getattr(t, "_dynamo_dynamic_range", None) or ():
        ranges[getattr(entry, "dim", None)] = (getattr(entry, "min", None), getattr(entry, "max", None))
    unbacked = set(getattr(t, "_dynamo_unbacked_indices", None) or ())
    unbacked |= set(getattr(t, "_dynamo_strict_unbacked_indices", None) or ())
    return set(strict), weak, set(static), ranges, unbacked


# ---- what each code object has seen ----------------------------------------------------------


class FrameShapes:
    """Sizes and ints one code object's inputs had, by source name; None marks a dimension
    or an int seen to change (dynamic from then on)."""

    def __init__(self):
        self.sizes = {}  # source name -> list of int | None
        self.ints = {}  # source name -> int | None

    def __repr__(self):
        return f"FrameShapes(sizes={self.sizes}, ints={self.ints})"


_frame_shapes = {}  # id(code) -> (weakref to code, FrameShapes)


def frame_shapes(code):
    """The FrameShapes of `code` (created on first use, dropped with the code object)."""
    entry = _frame_shapes.get(id(code))
    if entry is not None and entry[0]() is code:
        return entry[1]
    key = id(code)
    state = FrameShapes()
    _frame_shapes[key] = (weakref.ref(code, lambda _, key=key: _frame_shapes.pop(key, None)), state)
    return state


def reset():
    """Forget what every code object has seen (bytegraph.reset)."""
    _frame_shapes.clear()


# ---- one compile's decisions -------------------------------------------------------------------


def _static_parameter(t):
    """An nn.Parameter keeps static sizes (config.force_parameter_static_shapes): a new shape
    recompiles rather than making a weight symbolic."""
    return config.force_parameter_static_shapes and isinstance(t, torch.nn.Parameter)


def _automatic_kind():
    # Checked here too: under `bytegraph run` the setting reads torch's, which nothing validated.
    kind = config.automatic_dynamic_shapes_mark_as
    if kind not in ("dynamic", "unbacked"):
        raise ValueError(f"config.automatic_dynamic_shapes_mark_as = {kind!r}: expected 'dynamic' or 'unbacked'")
    return kind


class ShapePolicy:
    """What one compile of a code object makes symbolic. `dynamic` is the compile's
    `dynamic=` setting; `state` the code object's FrameShapes (updated as inputs are seen)."""

    def __init__(self, dynamic, state):
        self.dynamic = dynamic
        self.state = state

    def tensor_dims(self, name, t):
        """A DimSpec per dimension of input tensor `t` (source `name`), or None if all static."""
        ndim = t.dim()
        strict, weak, static, ranges, unbacked = _marks(t)
        if not (strict or weak or unbacked) and (self.dynamic is False or _static_parameter(t)):
            return None
        seen = self._update_sizes(name, t)
        specs = []
        for dim in range(ndim):
            if dim in static:
                specs.append(DimSpec("static"))
            elif dim in unbacked:
                specs.append(DimSpec("unbacked", "marked with mark_unbacked"))
            elif dim in strict:
                low, high = ranges.get(dim, (None, None))
                specs.append(DimSpec("dynamic", "marked with mark_dynamic", strict=True, min=low, max=high))
            elif dim in weak:
                specs.append(DimSpec("dynamic", "marked with maybe_mark_dynamic"))
            elif seen is not None and seen[dim] is not None:
                # Seen to change: its own symbol, not one shared with whatever size it has now.
                specs.append(DimSpec(_automatic_kind(), seen[dim]))
            elif self._dynamic_from_the_start():
                specs.append(DimSpec("duck", "dynamic=True" if self.dynamic else "config.assume_static_by_default = False"))
            else:
                specs.append(DimSpec("static"))
        if all(spec.kind == "static" for spec in specs):
            return None
        return specs

    def _update_sizes(self, name, t):
        """Records t's sizes under `name`; for automatic dynamic, returns per dimension why
        it is dynamic (or None when it is not), or None when nothing is."""
        if self.dynamic is False or not config.automatic_dynamic_shapes:
            return None
        sizes = list(t.shape)
        recorded = self.state.sizes.get(name)
        if recorded is None and name in self.state.ints:
            # An int in an earlier call, a tensor now: what it holds changes from call to call.
            self.state.sizes[name] = [None] * len(sizes)
            return ["it was an int in an earlier call (automatic dynamic)"] * len(sizes) or None
        if recorded is None or len(recorded) != len(sizes):
            self.state.sizes[name] = sizes
            return None
        reasons = [None] * len(sizes)
        for dim, (before, now) in enumerate(zip(recorded, sizes)):
            if before is None:
                reasons[dim] = "its size changed in an earlier call (automatic dynamic)"
            elif before != now:
                recorded[dim] = None
                reasons[dim] = f"its size changed from {before} to {now} (automatic dynamic)"
        return reasons if any(reasons) else None

    def _dynamic_from_the_start(self):
        return self.dynamic is True or (self.dynamic is None and not config.assume_static_by_default)

    def int_dynamic(self, name, value, attribute=False):
        """Why int input `value` (source `name`) is symbolic, or None when it stays a constant.
        An `attribute` (an int an object keeps) is symbolic only once seen to change."""
        if self._dynamic_from_the_start() and not attribute:
            return "dynamic=True" if self.dynamic else "config.assume_static_by_default = False"
        if self.dynamic is False or not config.automatic_dynamic_shapes:
            return None
        ints = self.state.ints
        if name not in ints and name in self.state.sizes:
            ints[name] = None  # a tensor in an earlier call, an int now
            return "it was a tensor in an earlier call (automatic dynamic)"
        if name not in ints:
            ints[name] = value
            return None
        before = ints[name]
        if before is None:
            return "it changed in an earlier call (automatic dynamic)"
        if before != value:
            ints[name] = None
            return f"it changed from {before} to {value} (automatic dynamic)"
        return None
