"""bytegraph: a graph-capture JIT for PyTorch with a C++ core."""

from bytegraph._extension import _C
from bytegraph import config
from bytegraph.api import compile, graph_break, list_backends, optimize, reset
from bytegraph.eval_frame import disable
from bytegraph.optimized_module import OptimizedModule
from bytegraph.tracing import trace

__all__ = [
    "_C",
    "OptimizedModule",
    "compile",
    "config",
    "disable",
    "graph_break",
    "list_backends",
    "optimize",
    "reset",
    "trace",
]
__version__ = "0.1.0"
