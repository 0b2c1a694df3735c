"""What each compile of a frame cost and produced: the data behind compile_times(), explain's
"Compile Times" and the structured trace's compilation metrics.

One `FrameCompile` per call of the compiler on a cache miss. Its phases, in seconds:

- tracing: the symbolic interpretation of the frame's bytecode into a graph (C++ tracer,
  fake-tensor propagation of each op included);
- backend: the backend compiling the graph(s) (inductor's codegen and C++ compile, or
  nothing much for "eager");
- guards: building the guard tree that protects the new cache entry;
- codegen: generating the replacement bytecode (and the resume functions after a break).

A frame is named by its code's qualified name; `frame_id` numbers code objects in the order
they were first compiled and `compile_id` counts the compiles of one code (0 first, then one
per recompile), as torch.compile's trace ids `[frame_id/compile_id]` do.
"""

import contextlib
import dataclasses
import time

PHASES = ("tracing", "backend", "guards", "codegen")


@dataclasses.dataclass
class FrameCompile:
    code: object
    frame_id: int
    compile_id: int
    start_time: float  # time.time() when the compile began
    phases: dict = dataclasses.field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    outcome: str = "running"  # captured | split | eager | failed
    graphs: list = dataclasses.field(default_factory=list)  # graph names
    ddp_splits: list = dataclasses.field(default_factory=list)  # per graph: pieces compiled (DDP buckets)
    op_count: int = 0
    guard_count: int = 0
    recompile_reasons: list = dataclasses.field(default_factory=list)
    failure: str = ""
    graph_break: dict = None  # kind, message, user_stack
    resumes: list = dataclasses.field(default_factory=list)  # resume functions of a split
    spans: list = dataclasses.field(default_factory=list)  # (phase, start time.time(), seconds)
    _wall_start: float = 0.0
    total: float = 0.0
    # Held only until the compile is logged (structured trace), then dropped.
    graph_modules: list = dataclasses.field(default_factory=list)  # (name, GraphModule)
    new_code: object = None
    guards: list = dataclasses.field(default_factory=list)
    steps: object = None  # the viewer's Trace of this frame, when recorded

    def add_graph(self, name, gm, pieces=1):
        self.graphs.append(name)
        self.ddp_splits.append(pieces)
        self.graph_modules.append((name, gm))
        self.op_count += sum(1 for node in gm.graph.nodes if node.op.startswith("call_"))

    def captured(self, new_code, guard_lines, outcome, resumes=()):
        self.new_code = new_code
        self.guards = list(guard_lines)
        self.guard_count = len(self.guards)
        self.outcome = outcome
        self.resumes = list(resumes)

    def release(self):
        """Drop what only the trace log needed (graphs, code), keep the numbers."""
        self.graph_modules = []
        self.new_code = None
        self.steps = None

    @property
    def name(self):
        return self.code.co_qualname if self.code is not None else "?"

    @contextlib.contextmanager
    def phase(self, name):
        wall, start = time.time(), time.perf_counter()
        try:
            yield
        finally:
            duration = time.perf_counter() - start
            self.phases[name] += duration
            self.spans.append((name, wall, duration))

    @property
    def trace_id(self):
        return f"[{self.frame_id}/{self.compile_id}]"


_frame_ids = {}  # code -> frame id
_compile_counts = {}  # code -> compiles so far
_records = []


def begin(code):
    """A new FrameCompile for a cache miss of `code`, recorded for compile_times()."""
    frame_id = _frame_ids.setdefault(code, len(_frame_ids))
    compile_id = _compile_counts.get(code, 0)
    _compile_counts[code] = compile_id + 1
    record = FrameCompile(code, frame_id, compile_id, time.time(), _wall_start=time.perf_counter())
    _records.append(record)
    return record


def untracked():
    """A FrameCompile that is not recorded (for callers outside the compile path)."""
    return FrameCompile(None, -1, -1, time.time(), _wall_start=time.perf_counter())


def finish(record, outcome):
    record.outcome = outcome
    record.total = time.perf_counter() - record._wall_start


def records():
    """Every FrameCompile since the last reset, in compile order."""
    return list(_records)


def reset():
    _frame_ids.clear()
    _compile_counts.clear()
    _records.clear()


def compile_times(repr="str", aggregate=False):
    """Time spent compiling each frame since the last bytegraph.reset(), by phase.

    Phases: tracing (symbolic interpretation of the bytecode into a graph), backend (the
    backend compiling the graphs), guards (building the guard tree), codegen (generating the
    replacement bytecode), and total (the whole compile, from the cache miss to the new
    entry, the four phases and bytegraph's own bookkeeping). Frames that ran eagerly without
    a graph are left out.

    repr="str" returns a table, one row per compile (per frame with aggregate=True: times
    summed); repr="csv" returns (header, rows) with times in seconds.
    """
    if repr not in ("str", "csv"):
        raise ValueError(f"compile_times(repr=...) takes 'str' or 'csv', got {repr!r}")
    header = ["frame", "compiles", *PHASES, "total"]
    rows = []
    by_frame = {}
    for record in _records:
        if record.outcome not in ("captured", "split"):
            continue
        times = [record.phases[p] for p in PHASES] + [record.total]
        if aggregate:
            row = by_frame.get(record.name)
            if row is None:
                row = by_frame[record.name] = [record.name, 0] + [0.0] * len(times)
                rows.append(row)
            row[1] += 1
            for i, value in enumerate(times):
                row[2 + i] += value
        else:
            rows.append([f"{record.name} {record.trace_id}", 1, *times])
    if repr == "csv":
        return header, rows
    table = [header[:1] + header[1:2] + [f"{name} (ms)" for name in header[2:]]]
    for row in rows:
        table.append([row[0], str(row[1])] + [f"{value * 1000:.1f}" for value in row[2:]])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths)))
             for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
