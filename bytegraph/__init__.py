"""bytegraph: a graph-capture JIT for PyTorch with a C++ core."""

from bytegraph._extension import _C
from bytegraph import config
from bytegraph.comptime import comptime
from bytegraph.api import compile, graph_break, list_backends, optimize, reset
from bytegraph.eval_frame import disable
from bytegraph.optimized_module import OptimizedModule

__all__ = [
    "_C",
    "OptimizedModule",
    "compile",
    "comptime",
    "config",
    "disable",
    "graph_break",
    "list_backends",
    "optimize",
    "reset",
]
__version__ = "0.1.0"
