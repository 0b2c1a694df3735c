"""bytegraph: a graph-capture JIT for PyTorch with a C++ core."""

from bytegraph._extension import _C

__all__ = ["_C"]
__version__ = "0.1.0"
