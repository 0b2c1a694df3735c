"""bytegraph.explain(fn)(*args, **kwargs): what capturing fn does on one call.

It runs fn once, compiled under a fresh cache (bytegraph.reset() before and after) with a
backend that keeps each graph and runs it eagerly, and returns an ExplainOutput: the
graphs, where and why they were split, their ops, the guards that protect them and the time
each frame took to compile. `print(bytegraph.explain(f)(x))` shows a readable summary.
"""

import linecache
import time
import traceback
from dataclasses import dataclass, field

from bytegraph import _logging, api
from bytegraph._extension import _C
from bytegraph._convert_frame import FrameConverter

__all__ = ["explain", "ExplainOutput", "GraphBreakReason"]


@dataclass
class GraphBreakReason:
    """One graph break: why (`reason`, with its stable `kind`), and where in the user's
    code: `filename`, `lineno`, `source_line`, and the `user_stack` through inlined calls
    (traceback.FrameSummary entries, outermost first)."""

    reason: str
    kind: str
    user_stack: list = field(default_factory=list)

    @property
    def filename(self):
        return self.user_stack[-1].filename if self.user_stack else None

    @property
    def lineno(self):
        return self.user_stack[-1].lineno if self.user_stack else None

    @property
    def source_line(self):
        return self.user_stack[-1].line if self.user_stack else ""

    def __str__(self):
        where = "".join(traceback.StackSummary.from_list(self.user_stack).format()).rstrip()
        return f"{self.kind}: {self.reason}\n{where}" if where else f"{self.kind}: {self.reason}"


@dataclass
class ExplainOutput:
    graphs: list
    graph_count: int
    graph_break_count: int
    break_reasons: list
    op_count: int
    ops_per_graph: list
    guards: list
    compile_times: list  # (function qualname, seconds), in compile order

    @property
    def out_guards(self):
        """torch._dynamo.explain's name for `guards`."""
        return self.guards

    def __str__(self):
        lines = [
            f"Graph Count: {self.graph_count}",
            f"Graph Break Count: {self.graph_break_count}",
            f"Op Count: {self.op_count}",
            "Break Reasons:",
        ]
        for i, reason in enumerate(self.break_reasons, 1):
            lines.append(f"  Break Reason {i}:")
            lines.append(f"    Reason: {reason.kind}: {reason.reason}")
            if reason.user_stack:
                lines.append("    User Stack:")
                for frame in reason.user_stack:
                    lines.append(f'      File "{frame.filename}", line {frame.lineno}, in {frame.name}')
                    if frame.line:
                        lines.append(f"        {frame.line}")
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops per Graph {i}:")
            lines.extend(f"    {op}" for op in ops)
        lines.append("Out Guards:")
        for i, guard in enumerate(self.guards, 1):
            lines.append(f"  Guard {i}: {guard}")
        lines.append("Compile Times:")
        for name, seconds in self.compile_times:
            lines.append(f"  {name}: {seconds * 1000:.1f} ms")
        return "\n".join(lines)


def _frame_summary(entry):
    """'file:line in function' (the tracer's user stack entry) -> traceback.FrameSummary."""
    location, _, name = entry.rpartition(" in ")
    filename, _, line = location.rpartition(":")
    if not line.isdigit():
        return traceback.FrameSummary(entry, 0, "?", line="")
    lineno = int(line)
    return traceback.FrameSummary(filename, lineno, name, line=linecache.getline(filename, lineno).strip())


def _strip_location(message):
    """The tracer appends ' (at file:line in fn)': explain keeps the location separately."""
    head, sep, tail = message.rpartition(" (at ")
    return head if sep and tail.endswith(")") else message


def _op_names(gm):
    return [f"{node.op} {_logging._target_name(node.target)}" for node in gm.graph.nodes if node.op.startswith("call_")]


class _Recorder:
    def __init__(self):
        self.graphs = []
        self.breaks = []
        self.guards = []
        self.compile_times = []
        self.broken_codes = set()

    def explain_backend(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    def add_break(self, code, kind, message, user_stack):
        stack = [_frame_summary(entry) for entry in user_stack]
        if stack and _C.codegen.is_resume_code(code) and stack[0].name == code.co_name:
            # A break in the code after an earlier break: name the user's function, not the
            # resume function bytegraph made for it.
            first = stack[0]
            stack[0] = traceback.FrameSummary(first.filename, first.lineno, _C.codegen.resume_origin(code)[0].co_name,
                                              line=first.line)
        self.breaks.append(GraphBreakReason(_strip_location(message), kind, stack))
        self.broken_codes.add(code)

    def breaks_of(self, code):
        return code in self.broken_codes


class _ExplainConverter(FrameConverter):
    """The ordinary frame callback, also telling the recorder about breaks and timings."""

    def __init__(self, recorder):
        super().__init__(recorder.explain_backend, guard_export_fn=recorder.guards.extend)
        self.recorder = recorder

    def convert(self, frame_info):
        start = time.perf_counter()
        result = super().convert(frame_info)
        if result is not None or self.recorder.breaks_of(frame_info.f_code):
            # Frames that were captured or split (not ones declined as not worth capturing).
            self.recorder.compile_times.append((frame_info.f_code.co_qualname, time.perf_counter() - start))
        return result

    def _report_break(self, code, kind, message, user_stack):
        self.recorder.add_break(code, kind, message, list(user_stack))
        super()._report_break(code, kind, message, user_stack)


def explain(fn):
    """Returns a callable: explain(fn)(*args, **kwargs) -> ExplainOutput (see module doc)."""
    if not callable(fn):
        raise TypeError(f"bytegraph.explain expects a function or nn.Module, got {type(fn).__name__}")

    def run(*args, **kwargs):
        recorder = _Recorder()
        api.reset()
        try:
            converter = _ExplainConverter(recorder)
            compiled = api.OptimizeContext(converter, dict(backend="explain"))(fn)
            compiled(*args, **kwargs)
        finally:
            api.reset()
        ops = [_op_names(gm) for gm in recorder.graphs]
        return ExplainOutput(
            graphs=recorder.graphs,
            graph_count=len(recorder.graphs),
            graph_break_count=len(recorder.breaks),
            break_reasons=recorder.breaks,
            op_count=sum(len(o) for o in ops),
            ops_per_graph=ops,
            guards=recorder.guards,
            compile_times=recorder.compile_times,
        )

    return run

