"""The step-by-step trace viewer: what the symbolic interpreter did, as a web page or slides.

The tracer reports its steps to a `TraceRecorder`, which builds a `Trace`; the trace
renders itself with `to_html`, `to_beamer` and `to_org`.
"""

from bytegraph.viewer import beamer, html, org  # noqa: F401  (each registers its Trace writer)
from bytegraph.viewer.model import FrameTrace, Step, Trace
from bytegraph.viewer.recorder import TraceRecorder, fx_graph_rows, fx_node_row

__all__ = ["FrameTrace", "Step", "Trace", "TraceRecorder", "fx_graph_rows", "fx_node_row"]
