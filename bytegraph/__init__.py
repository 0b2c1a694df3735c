"""bytegraph: a graph-capture JIT for PyTorch with a C++ core."""

from bytegraph._extension import _C
from bytegraph import config
from bytegraph import _logging
from bytegraph._logging import set_logs
from bytegraph.comptime import comptime
from bytegraph.explain import explain
from bytegraph.api import compile, graph_break, list_backends, optimize, reset
from bytegraph._dynamic import mark_dynamic, mark_static, maybe_mark_dynamic
from bytegraph.eval_frame import disable
from bytegraph.optimized_module import OptimizedModule
from bytegraph.tracing import trace

__all__ = [
    "_C",
    "OptimizedModule",
    "compile",
    "comptime",
    "config",
    "disable",
    "explain",
    "graph_break",
    "list_backends",
    "mark_dynamic",
    "mark_static",
    "maybe_mark_dynamic",
    "optimize",
    "reset",
    "trace",
    "set_logs",
]
__version__ = "0.1.0"

from bytegraph import testing  # noqa: E402  (bytegraph.testing.CompileCounter is public API)

_logging.init_from_environment()
