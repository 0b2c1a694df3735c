"""What each system captures from a model: graphs, graph breaks, ops, frames left eager.

bytegraph: a CompileCounter backend counts graphs and ops; its loggers tell the breaks
("bytegraph.graph_breaks"), the frames that could not be split at a break and ran eagerly,
and the frames it could not compile ("bytegraph" warnings), which run eagerly too (their
callees may still be captured on their own). torch: torch._dynamo.explain.
"""

import contextlib
import logging

import torch


class _Collect(logging.Handler):
    """Sorts bytegraph's log records into graph breaks, frames run eagerly and failures.

    A break either splits the frame (a graph before it, resume functions after it) or, where
    the frame cannot be split, makes the frame run eagerly: the latter is logged from
    FrameConverter._on_graph_break, or as "<frame> runs eagerly: <why>".
    """

    def __init__(self):
        super().__init__(level=logging.INFO)
        self.breaks = []
        self.eager = []
        self.failures = []

    def emit(self, record):
        first_line = record.getMessage().splitlines()[0]
        if record.name == "bytegraph.graph_breaks":
            if first_line.startswith("Graph break in"):
                self.breaks.append(first_line)
                if record.funcName == "_on_graph_break":
                    self.eager.append(first_line)
            elif " runs eagerly" in first_line:
                self.eager.append(first_line)
        elif record.levelno >= logging.WARNING:
            self.failures.append(first_line)


@contextlib.contextmanager
def bytegraph_events():
    """Collects bytegraph's graph breaks and compile failures while the block runs.

    Only the graph-break logger is lowered to INFO: the graph and guard loggers stay quiet,
    since rendering graphs while they are enabled would be timed as tracing.
    """
    root = logging.getLogger("bytegraph")
    breaks = logging.getLogger("bytegraph.graph_breaks")
    saved = (root.level, root.propagate, breaks.level)
    handler = _Collect()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    root.propagate = False
    breaks.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        root.propagate = saved[1]
        breaks.setLevel(saved[2])


def bytegraph_capture(fn, args, kwargs):
    """Graphs, ops, breaks and eager frames of one bytegraph compile (CompileCounter backend)."""
    import bytegraph
    from bytegraph.testing import CompileCounter

    bytegraph.reset()
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    with bytegraph_events() as events, torch.no_grad():
        compiled(*args, **kwargs)
    bytegraph.reset()
    return {
        "graphs": counter.frame_count,
        "ops": counter.op_count,
        "breaks": len(events.breaks),
        "eager_frames": len(events.eager) + len(events.failures),
        "break_reasons": events.breaks[:3],
        "eager_reasons": events.eager[:3],
        "failures": events.failures[:3],
    }


def torch_capture(fn, args, kwargs):
    """Graphs, ops and breaks of one torch._dynamo trace (explain)."""
    torch._dynamo.reset()
    with torch.no_grad():
        explanation = torch._dynamo.explain(fn)(*args, **kwargs)
    torch._dynamo.reset()
    return {
        "graphs": explanation.graph_count,
        "ops": explanation.op_count,
        "breaks": explanation.graph_break_count,
        "break_reasons": [str(getattr(r, "reason", r)).splitlines()[0] for r in explanation.break_reasons[:3]],
    }
