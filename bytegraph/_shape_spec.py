"""What the compile path needs to know of dynamic shapes before any trace is symbolic.

Kept apart from `_bridge_shapes` (torch's ShapeEnv and sympy, a third of a second to import)
so that a process whose traces stay static never imports them.
"""

from __future__ import annotations

import dataclasses
import functools

import torch._guards  # loaded by `import torch`


class ConstraintViolation(Exception):
    """A dimension marked dynamic with mark_dynamic was specialised by the code."""


@dataclasses.dataclass
class DimSpec:
    """How one dimension of an input is made: kind is "static", "dynamic", "duck" (dynamic,
    sharing a symbol with any other duck dimension of the same size) or "unbacked" (a symbol
    with no value to guard or branch on: mark_unbacked, or automatic dynamic under
    config.automatic_dynamic_shapes_mark_as = "unbacked"); `strict` for
    mark_dynamic (specialising it is an error); min/max bound it; `why` is for the log."""

    kind: str
    why: str = ""
    strict: bool = False
    min: int | None = None
    max: int | None = None


@dataclasses.dataclass(frozen=True)
class SourceName(torch._guards.Source):
    """A bytegraph source (`L['x']`) as torch's ShapeEnv wants it: a Source with a name."""

    text: str

    @property
    def _name_template(self):
        return self.text

    @functools.cached_property
    def guard_source(self):
        return torch._guards.GuardSource.LOCAL
