"""What the C++ core's plans look like from Python, and the Python their generated code calls:
how a traced function's return value is rebuilt from the graph's outputs (for tests and tools,
which read plans as these views), and the list iterator a resumed loop continues with."""

from __future__ import annotations


# How a traced function's return value is rebuilt from the graph's outputs: a tree of
# tuples/lists/dicts whose leaves are one of these three.
class GraphOutput:
    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self):
        return f"GraphOutput({self.index})"

    def __eq__(self, other):
        return isinstance(other, GraphOutput) and other.index == self.index


class Constant:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Constant({self.value!r})"

    def __eq__(self, other):
        return isinstance(other, Constant) and other.value == self.value


class Source:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"Source({self.name})"

    def __eq__(self, other):
        return isinstance(other, Source) and other.name == self.name


def rebuild_output(tree, graph_outputs, resolve_source=None):
    """The traced function's return value from the graph's outputs and a trace's `output`
    description; `resolve_source(name)` supplies Source leaves (e.g. from the frame)."""
    if isinstance(tree, GraphOutput):
        return graph_outputs[tree.index]
    if isinstance(tree, Constant):
        return tree.value
    if isinstance(tree, Source):
        if resolve_source is None:
            raise ValueError(f"no value for source {tree.name}")
        return resolve_source(tree.name)
    if isinstance(tree, NamedTuple):
        return tree.constructor(tuple(rebuild_output(item, graph_outputs, resolve_source) for item in tree.items))
    if isinstance(tree, tuple):
        return tuple(rebuild_output(item, graph_outputs, resolve_source) for item in tree)
    if isinstance(tree, list):
        return [rebuild_output(item, graph_outputs, resolve_source) for item in tree]
    if isinstance(tree, dict):
        return {key: rebuild_output(item, graph_outputs, resolve_source) for key, item in tree.items()}
    raise TypeError(f"not an output description: {tree!r}")


class NamedTuple:
    """A named tuple (or torch.return_types structseq) built by `constructor(tuple(items))`."""

    __slots__ = ("constructor", "items")

    def __init__(self, constructor, items):
        self.constructor, self.items = constructor, list(items)

    def __repr__(self):
        return f"NamedTuple({self.constructor!r}, {self.items!r})"

    def __eq__(self, other):
        return isinstance(other, NamedTuple) and (other.constructor, other.items) == (self.constructor, self.items)


class PlanView:
    """A plan kind with no view class of its own (a NULL, an iterator, a bound method...)."""

    __slots__ = ("kind", "items")

    def __init__(self, kind, items):
        self.kind, self.items = kind, list(items)

    def __repr__(self):
        return f"PlanView({self.kind!r}, {self.items!r})"

    def __eq__(self, other):
        return isinstance(other, PlanView) and (other.kind, other.items) == (self.kind, self.items)


def list_iterator_at(state):
    """The iterator of a list standing at an index, from `state` = (list, index): what a loop
    interrupted by a graph break continues with in its resume function, whose prologue calls
    this (traced, or run). It reads the list as it changes, as the interrupted loop would."""
    items, position = state
    iterator = iter(items)
    iterator.__setstate__(position)
    return iterator
