"""The tracer's event stream (csrc/record/, `bytegraph._C.record`) as a viewer `Trace`."""

from __future__ import annotations

import dis

from bytegraph._extension import _C
from bytegraph.viewer.recorder import TraceRecorder


class EventAdapter:
    """Receives the C++ event stream (bytegraph._C.record) and forwards it to a TraceRecorder.

    The stream sends the graph as a delta (rows kept from the previous step, rows added);
    this side keeps the current trace's rows, so each step gets the whole graph so far. It
    also tells frame kinds apart (original, resume function, inlined call) and shows each
    instruction's argument as `dis` does, like the viewer's bytecode panel.
    """

    def __init__(self, recorder: TraceRecorder):
        self.recorder = recorder
        self._rows: list[str] = []
        self._argreprs: dict[int, dict[int, str]] = {}  # frame id -> {offset: argrepr}

    def begin_frame(self, name, code, parent):
        if parent is None:
            kind = "resume" if code is not None and _C.codegen.is_resume_code(code) else "original"
            self._rows = []  # a new trace: its graph starts empty
        else:
            kind = "inlined"
        frame_id = self.recorder.begin_frame(name, code, kind=kind, parent=parent)
        if code is not None:
            self._argreprs[frame_id] = {inst.offset: inst.argrepr for inst in dis.get_instructions(code)}
        return frame_id

    def step(self, frame, offset, opname, argrepr, line, stack, locals, graph_kept, graph_added, note):
        if graph_added or graph_kept != len(self._rows):
            self._rows = self._rows[:graph_kept] + graph_added
        argrepr = self._argreprs.get(frame, {}).get(offset, argrepr)
        self.recorder.step(frame, offset, opname, argrepr, line, stack, locals, self._rows, note)

    def end_frame(self, frame):
        self.recorder.end_frame(frame)

    def end_trace(self, graph_module, guards):
        self.recorder.add_graph(graph_module)
        self.recorder.add_guards(guards)
