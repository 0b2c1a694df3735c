"""bytegraph: a graph-capture JIT for PyTorch with a C++ core."""

from bytegraph import _lazy_dynamo

_lazy_dynamo.install()

from bytegraph._extension import _C  # noqa: E402
from bytegraph import config
from bytegraph import _logging
from bytegraph._logging import set_logs
from bytegraph.comptime import comptime
from bytegraph.explain import explain
from bytegraph.api import compile, compile_times, graph_break, list_backends, optimize, reset, set_trace_dir
from bytegraph._dynamic import mark_dynamic, mark_static, mark_unbacked, maybe_mark_dynamic
from bytegraph.eval_frame import disable
from bytegraph.graph_rules import allow_in_graph, disallow_in_graph, is_compiling
from bytegraph.stance import set_stance
from bytegraph import _structured_trace
from bytegraph.optimized_module import OptimizedModule
from bytegraph.tracing import trace

__all__ = [
    "_C",
    "OptimizedModule",
    "allow_in_graph",
    "compile",
    "compile_times",
    "comptime",
    "config",
    "disable",
    "disallow_in_graph",
    "explain",
    "graph_break",
    "is_compiling",
    "list_backends",
    "mark_dynamic",
    "mark_static",
    "mark_unbacked",
    "maybe_mark_dynamic",
    "optimize",
    "reset",
    "set_logs",
    "set_stance",
    "set_trace_dir",
    "trace",
]
__version__ = "0.1.0"

from bytegraph import testing  # noqa: E402  (bytegraph.testing.CompileCounter is public API)

_logging.init_from_environment()
_structured_trace.init_from_environment()
