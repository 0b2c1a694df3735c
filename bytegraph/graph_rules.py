"""Telling the tracer how to treat a function: allow_in_graph, disallow_in_graph, is_compiling.

- `allow_in_graph(fn)`: calls to `fn` go into the graph as one node (`call_function fn`),
  without tracing its body; it runs on fake tensors while tracing, so it must be made of
  operations that work on them, and its Python side effects are not replayed.
- `disallow_in_graph(fn)`: a call to `fn` is a graph break; `fn` runs eagerly between the
  graphs before and after it.
- `is_compiling()`: False when run normally, True in code bytegraph captured (the tracer folds
  the call to the constant True), so a function can take a capture-friendly path.

The rules live in the torch bridge (`bytegraph._classify.set_rule`, consulted first by its
`classify()`, and its folded queries for is_compiling). Rules apply to compiles made after they are set: call
bytegraph.reset() to recompile functions captured before.
"""

from bytegraph import _classify

__all__ = ["allow_in_graph", "disallow_in_graph", "is_compiling"]


def _each(fn, what):
    if isinstance(fn, (list, tuple)):
        return list(fn)
    if not callable(fn):
        raise TypeError(f"{what} expects a function (or a list of functions), got {type(fn).__name__}")
    return [fn]


def allow_in_graph(fn):
    """Put calls to `fn` in the graph as one opaque node; returns `fn` (a decorator)."""
    for item in _each(fn, "allow_in_graph"):
        if not callable(item):
            raise TypeError(f"allow_in_graph expects functions, got {type(item).__name__}")
        _classify.set_rule(item, "torch_function")
    return fn


def disallow_in_graph(fn):
    """Make every call to `fn` a graph break (fn runs eagerly); returns `fn` (a decorator)."""
    for item in _each(fn, "disallow_in_graph"):
        if not callable(item):
            raise TypeError(f"disallow_in_graph expects functions, got {type(item).__name__}")
        _classify.set_rule(item, "unknown")
    return fn


def is_compiling():
    """True in code that bytegraph captured, False when run normally."""
    return False


# The tracer folds calls of this function to True (bytegraph._classify's folded queries).
_classify.register_folded(is_compiling, True)
