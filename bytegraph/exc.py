"""The exceptions bytegraph raises to users.

`Unsupported` (a graph break) and `InternalError` (a bug in bytegraph) come from the C++ core;
they are re-exported here so user code needs one import for every bytegraph error.
"""

from bytegraph._extension import _C

Unsupported = _C.Unsupported
InternalError = _C.InternalError


class BytegraphError(RuntimeError):
    """Base of the errors raised by bytegraph's Python layer."""


class InvalidBackend(ValueError):
    """A backend name that no registry knows."""

    def __init__(self, name, known):
        self.name = name
        self.known = tuple(known)
        super().__init__(
            f"unknown backend {name!r}; valid backend names are: {', '.join(self.known)}"
            " (or pass a callable taking (torch.fx.GraphModule, list[torch.Tensor]))"
        )


class BackendCompilerFailed(BytegraphError):
    """A backend raised, or returned something that cannot be called, while compiling a graph.

    The backend's own exception is chained as `__cause__` and kept in `inner_exception`.
    """

    def __init__(self, backend_name, graph_name, inner_exception):
        self.backend_name = backend_name
        self.graph_name = graph_name
        self.inner_exception = inner_exception
        # Not super(): under `python -m bytegraph run` a subclass is also torch's
        # BackendCompilerFailed, whose __init__ takes other arguments.
        RuntimeError.__init__(
            self,
            f"backend {backend_name!r} failed to compile graph {graph_name!r}: "
            f"{type(inner_exception).__name__}: {inner_exception}",
        )


class ConstraintViolationError(BytegraphError):
    """A dimension marked with mark_dynamic had to be specialised to one value while tracing
    (use maybe_mark_dynamic where that is acceptable)."""


class GraphBreakError(BytegraphError, Unsupported):
    """A graph break where none is allowed (`fullgraph=True` / `nopython=True`).

    Carries the break's `kind`, `reason`, the user's `filename`, `lineno` and `source_line`,
    and the `user_stack` ("file:line in function", outermost first).
    """

    def __init__(self, kind, reason, user_stack, filename=None, lineno=None, source_line="", hint=""):
        self.kind = kind
        self.reason = reason
        self.user_stack = list(user_stack)
        self.filename = filename
        self.lineno = lineno
        self.source_line = source_line
        self.hint = hint
        where = f'\n  File "{filename}", line {lineno}' if filename else ""
        code = f"\n    {source_line.strip()}" if source_line.strip() else ""
        tip = f"\nHint: {hint}" if hint else ""
        super().__init__(f"graph break under fullgraph=True ({kind}): {reason}{where}{code}{tip}")


# What bytegraph raises for a fullgraph break and for a failing backend: the class itself, or
# under `python -m bytegraph run` a subclass that is also torch._dynamo.exc's class of that
# meaning (Unsupported, BackendCompilerFailed), so code written for torch.compile catches it.
_raised_types = {}


def raised_type(error_type):
    """The class bytegraph raises where it means `error_type`."""
    return _raised_types.get(error_type, error_type)


def set_raised_type(error_type, subclass):
    """Installs `subclass` as what bytegraph raises for `error_type`; returns the previous one."""
    if not issubclass(subclass, error_type):
        raise TypeError(f"{subclass!r} is not a subclass of {error_type.__name__}")
    previous = raised_type(error_type)
    _raised_types[error_type] = subclass
    return previous


class CorrectnessError(BytegraphError):
    """`config.verify_correctness`: the compiled call disagreed with the original run eagerly.

    `what` says where they differ (the return value, an argument mutated differently, the
    exception raised); `eager` and `compiled` hold both sides.
    """

    def __init__(self, function_name, what, eager, compiled):
        self.function_name = function_name
        self.what = what
        self.eager = eager
        self.compiled = compiled
        super().__init__(
            f"compiled {function_name} disagrees with eager execution in {what}:\n"
            f"  eager:    {_short(eager)}\n  compiled: {_short(compiled)}"
        )


def _short(value, limit=400):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
