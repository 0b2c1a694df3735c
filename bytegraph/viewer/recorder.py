"""Builds a `Trace` from the tracer's events.

The C++ symbolic interpreter calls these methods while it runs (only when someone asked for
a trace), passing plain values: ints, strings, lists of strings, a dict of strings. Values
that are not strings yet are turned into text here with str(), so a caller may also hand
over objects whose str() is the repr it wants shown.
"""

from __future__ import annotations

import linecache

from bytegraph.viewer.model import FRAME_KINDS, FrameTrace, Step, Trace


def fx_node_row(node) -> str:
    """One torch.fx node in the tabular form the graph panel shows: opcode, name, target, args, kwargs."""
    target = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
    return f"{node.op}  {node.name}  {target}  {node.args}  {node.kwargs}"


def fx_graph_rows(graph) -> list[str]:
    """Every node of a torch.fx Graph (or a GraphModule's graph) as `fx_node_row` text."""
    graph = getattr(graph, "graph", graph)
    return [fx_node_row(node) for node in graph.nodes]


class TraceRecorder:
    """Receives begin_frame / step / end_frame / add_graph / add_guards events; `trace()` returns the result."""

    def __init__(self):
        self._frames: list[FrameTrace] = []
        self._open: set[int] = set()
        self._timeline: list[tuple[int, int]] = []
        self._graphs: list = []
        self._guards: list[str] = []
        self._result = None

    def begin_frame(self, name, code=None, kind="original", parent=None) -> int:
        """Start a frame; returns the id later events name it by."""
        if kind not in FRAME_KINDS:
            raise ValueError(f"frame kind must be one of {FRAME_KINDS}, got {kind!r}")
        parent_step = None
        if parent is not None:
            self._check_frame(parent)
            # Steps are recorded after their instruction ran, so the parent's instruction
            # that makes this call gets the next step index.
            parent_step = len(self._frames[parent].steps)
        elif kind == "inlined":
            raise ValueError("an inlined frame needs the id of its calling frame as parent")
        code = getattr(code, "__code__", code)  # a function stands for its code
        frame = FrameTrace(name=str(name), code=code, kind=kind, parent=parent, parent_step=parent_step)
        self._frames.append(frame)
        frame_id = len(self._frames) - 1
        self._open.add(frame_id)
        return frame_id

    def step(self, frame_id, offset, opname, argrepr="", line=None, stack=(), locals=None, graph=None, note=""):
        """Record the state right after one instruction of frame `frame_id` ran.

        `locals` or `graph` given as None mean "unchanged since this frame's last step"
        (or empty for the first), which spares the caller rebuilding them every time.
        """
        self._check_frame(frame_id)
        if frame_id not in self._open:
            raise ValueError(f"frame {frame_id} has ended; no more steps can be recorded for it")
        frame = self._frames[frame_id]
        previous = frame.steps[-1] if frame.steps else None
        if locals is None:
            locals = previous.locals if previous else {}
        if graph is None:
            graph = previous.graph if previous else []
        line = None if line is None or int(line) < 0 else int(line)  # -1: no line (artificial code)
        frame.steps.append(
            Step(
                offset=int(offset),
                opname=str(opname),
                argrepr=str(argrepr),
                line=line,
                source=self._source_line(frame, line),
                stack=[str(value) for value in stack],
                locals={str(name): str(value) for name, value in dict(locals).items()},
                graph=[str(node) for node in graph],
                note=str(note),
            )
        )
        self._timeline.append((frame_id, len(frame.steps) - 1))

    def end_frame(self, frame_id) -> None:
        self._check_frame(frame_id)
        self._open.discard(frame_id)

    def add_graph(self, gm) -> None:
        """A compiled graph: a GraphModule, or its readable text."""
        self._graphs.append(gm)

    def add_guards(self, lines) -> None:
        if isinstance(lines, str):
            lines = lines.splitlines()
        self._guards.extend(str(line) for line in lines)

    def set_result(self, value) -> None:
        """The traced function's return value, shown with the graphs and guards."""
        self._result = value

    def trace(self) -> Trace:
        """The Trace recorded so far (frames still open are included as they are)."""
        return Trace(
            frames=list(self._frames),
            graphs=list(self._graphs),
            guards=list(self._guards),
            result=self._result,
            timeline=list(self._timeline),
        )

    def _check_frame(self, frame_id) -> None:
        if not isinstance(frame_id, int) or not 0 <= frame_id < len(self._frames):
            raise ValueError(f"no frame with id {frame_id!r} (begin_frame returns the ids)")

    @staticmethod
    def _source_line(frame: FrameTrace, line: int | None) -> str:
        if line is None:
            return ""
        lines, first = frame.source_lines
        if first <= line < first + len(lines):
            return lines[line - first].strip()
        if frame.code is not None:
            return linecache.getline(frame.code.co_filename, line).strip()
        return ""
