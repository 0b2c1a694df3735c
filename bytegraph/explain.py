"""bytegraph.explain(fn)(*args, **kwargs): what capturing fn does on one call.

It runs fn once, compiled under a fresh cache (bytegraph.reset() before and after) with a
backend that keeps each graph and runs it eagerly, and returns an ExplainOutput: the
graphs, where and why they were split, their ops, the guards that protect them, the code
bytegraph generated for each frame (as Python source next to the original) and the time each
frame took to compile. `print(bytegraph.explain(f)(x))` shows a readable summary.

Compile Times: per compile of a frame, the whole compile (from the cache miss to the new
cache entry) split into tracing (symbolic interpretation of the bytecode, with fake-tensor
propagation of each op), backend (the backend compiling the graph: explain's own backend
only keeps it, so this is near zero here; under inductor it is most of the time), guards
(building the guard tree) and codegen (the replacement bytecode and resume functions).
"""

import linecache
import traceback
from dataclasses import dataclass, field

from bytegraph import _bridge, _compile_metrics, _logging, _readable_code, _stack_names, api
from bytegraph._extension import _C
from bytegraph._convert_frame import CaptureOptions, FrameConverter

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
    compile_times: list  # (function qualname, seconds), in compile order: the whole compile
    compile_phases: list = field(default_factory=list)  # (qualname, {phase: seconds}), same order
    generated_code: list = field(default_factory=list)  # (qualname, original | generated, as text)
    # Per graph: the pieces it was compiled in. Under DistributedDataParallel each graph is
    # split at gradient-bucket boundaries (config.optimize_ddp); 1 for a graph compiled whole.
    ddp_splits: list = field(default_factory=list)

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
        if any(pieces > 1 for pieces in self.ddp_splits):
            lines.append("DDP Splits per Graph (pieces compiled, at gradient-bucket boundaries):")
            lines.extend(f"  Graph {i}: {pieces}" for i, pieces in enumerate(self.ddp_splits, 1))
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops per Graph {i}:")
            lines.extend(f"    {op}" for op in ops)
        inputs = [_symbolic_inputs(gm) for gm in self.graphs]
        if any(inputs):
            lines.append("Symbolic Inputs per Graph:")
            for i, text in enumerate(inputs, 1):
                if text:
                    lines.append(f"  Graph {i}: {text}")
        lines.append("Out Guards:")
        for i, guard in enumerate(self.guards, 1):
            lines.append(f"  Guard {i}: {guard}")
        if self.generated_code:
            lines.append("Generated Code:")
            for name, text in self.generated_code:
                lines.append(f"  {name}:")
                lines.extend(f"    {line}" for line in text.splitlines())
        lines.append("Compile Times (each frame's compile: tracing + backend + guards + codegen):")
        phases = dict(self.compile_phases)
        for name, seconds in self.compile_times:
            split = phases.get(name)
            detail = ""
            if split:
                detail = " = " + " + ".join(f"{p} {split[p] * 1000:.1f}" for p in _compile_metrics.PHASES) + " ms"
            lines.append(f"  {name}: {seconds * 1000:.1f} ms{detail}")
        if self.compile_times:
            lines.append("  (the first compile in a process also pays one-time setup of torch's fake tensors, "
                         "counted in its tracing time)")
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


def _symbolic_inputs(gm):
    """`s0: Sym(s0), L_x_: f32[s0, 3]` (forward's parameters) for a graph with symbolic sizes;
    empty for a static one."""
    import torch

    symbolic_types = (torch.SymInt, torch.SymFloat, torch.SymBool)
    parts, symbolic = [], False
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value")
        if isinstance(value, symbolic_types):
            symbolic = True
            parts.append(f"{node.target}: Sym({value})")
        elif isinstance(value, torch.Tensor):
            symbolic = symbolic or any(isinstance(size, torch.SymInt) for size in value.shape)
            parts.append(f"{node.target}: {_bridge.describe_fake(value)}")
    return ", ".join(parts) if symbolic else ""


def _op_names(gm):
    return [f"{node.op} {_logging._target_name(node.target)}" for node in gm.graph.nodes if node.op.startswith("call_")]


class _Recorder:
    def __init__(self):
        self.graphs = []
        self.ddp_splits = []
        self.breaks = []
        self.guards = []
        self.compile_times = []
        self.compile_phases = []
        self.generated = []
        self.broken_codes = set()

    @staticmethod
    def explain_backend(gm, example_inputs):
        # The graphs are recorded whole, as the compiler saw them (see _ExplainConverter):
        # under DDP this backend is handed each bucket's piece.
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
        super().__init__(recorder.explain_backend, CaptureOptions(guard_export_fn=recorder.guards.extend))
        self.recorder = recorder

    def _convert(self, frame_info, record):
        result = super()._convert(frame_info, record)
        self.recorder.graphs.extend(gm for _, gm in record.graph_modules)
        self.recorder.ddp_splits.extend(record.ddp_splits)
        return result

    def convert(self, frame_info):
        code = frame_info.f_code
        count = len(_compile_metrics.records())
        guards_before = len(self.recorder.guards)
        result = super().convert(frame_info)
        guards = self.recorder.guards
        guards[guards_before:] = [_stack_names.readable(guard, code) for guard in guards[guards_before:]]
        if result is not None or self.recorder.breaks_of(code):
            # Frames that were captured or split (not ones declined as not worth capturing).
            for record in _compile_metrics.records()[count:]:
                if record.code is code:
                    self.recorder.compile_times.append((code.co_qualname, record.total))
                    self.recorder.compile_phases.append((code.co_qualname, dict(record.phases)))
            if result is not None:
                original = _readable_code.original_code(code)
                self.recorder.generated.append(
                    (code.co_qualname, _readable_code.source_and_original(result[0], original)))
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
            compile_phases=recorder.compile_phases,
            generated_code=recorder.generated,
            ddp_splits=recorder.ddp_splits,
        )

    return run

