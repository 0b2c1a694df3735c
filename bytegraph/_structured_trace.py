"""The compile trace for tlparse: BYTEGRAPH_TRACE=<dir> or bytegraph.set_trace_dir(<dir>).

While a directory is set, each compile of a frame is written to
`<dir>/bytegraph_trace_<pid>_<n>.log` in the format of torch.compile's TORCH_TRACE, so that
`tlparse` (PyPI) turns it into its HTML report:

    BYTEGRAPH_TRACE=/tmp/trace python train.py
    tlparse --latest /tmp/trace -o /tmp/report --no-browser

The format (what tlparse parses): one glog-style line per event,
`V<MMDD> <HH:MM:SS.micro> <thread> <path>:<line>] <json>`, where the JSON object has one key
naming the event (`dynamo_start`, `dynamo_output_graph`, `artifact`, ...), the compile id
(`frame_id`, `frame_compile_id`, `attempt`), and `has_payload` (the payload's md5) when lines
of payload follow, each starting with a tab. File names in stacks are interned with `str`
events. Per compiled frame (and per recompile) the trace has:

- `dynamo_start`: the call stack that reached the frame (the report's tree of frames);
- `dynamo_output_graph`: each graph, as readable code, with the shape of each node;
- `dynamo_cpp_guards_str` and `dynamo_guards`: the guards of the new cache entry;
- artifacts: `dynamo_graph_break_reason` (reason and user stack), `generated_code` (the
  replacement and the original, as source), `original_bytecode` / `modified_bytecode`;
- `chromium_event`s: the compile's spans (tracing, backend, guards, codegen), for the
  report's perfetto timeline;
- `link`: the step-by-step viewer page of the frame (bytegraph/viewer), written next to the
  log as `<dir>/viewer/frame_<frame>_<compile>.html`;
- `compilation_metrics`: times, counts, recompile reasons, and the graph break as a restart
  reason (tlparse marks such frames as breaks), or the failure.

Writing the trace costs time only while a directory is set.
"""

import hashlib
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

ENV_VAR = "BYTEGRAPH_TRACE"
_PATHNAME = "bytegraph/_structured_trace.py"

_PACKAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


class _Writer:
    """One trace file, opened on the first event (so setting a directory costs nothing)."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self.path = None
        self._stream = None
        self._strings = {}
        self._lock = threading.Lock()

    def _open(self):
        self.directory.mkdir(parents=True, exist_ok=True)
        n = 0
        while True:
            path = self.directory / f"bytegraph_trace_{os.getpid()}_{n}.log"
            try:
                self._stream = open(path, "x", encoding="utf-8")
                break
            except FileExistsError:
                n += 1
        self.path = path

    def intern(self, text):
        index = self._strings.get(text)
        if index is None:
            index = self._strings[text] = len(self._strings)
            self.emit("str", [text, index])
        return index

    def emit(self, name, metadata, payload=None, compile_id=None):
        record = {name: metadata}
        if compile_id is not None:
            record.update(frame_id=compile_id[0], frame_compile_id=compile_id[1], attempt=0)
        if payload is not None:
            if not isinstance(payload, str):
                payload = json.dumps(payload, indent=0, default=repr)
            record["has_payload"] = hashlib.md5(payload.encode("utf-8"), usedforsecurity=False).hexdigest()
        now = time.time()
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1e6):06d}"
        line = f"V{stamp} {threading.get_ident()} {_PATHNAME}:0] {json.dumps(record, default=repr)}"
        if payload is not None:
            line += "".join(f"\n\t{part}" for part in payload.split("\n"))
        with self._lock:
            if self._stream is None:
                self._open()
            self._stream.write(line + "\n")
            self._stream.flush()

    def close(self):
        with self._lock:
            if self._stream is not None:
                self._stream.close()
                self._stream = None


_writer = None


def set_trace_dir(directory):
    """Write the compile trace into `directory` from now on (None stops). Returns the previous
    directory. tlparse reads the newest file there with `tlparse --latest <directory>`."""
    global _writer
    previous = _writer.directory if _writer is not None else None
    if _writer is not None:
        _writer.close()
    _writer = _Writer(directory) if directory is not None else None
    return previous


def trace_dir():
    """The directory the compile trace goes to, or None."""
    return _writer.directory if _writer is not None else None


def trace_file():
    """The trace file being written, or None (before the first compile, or when off)."""
    return _writer.path if _writer is not None else None


def enabled():
    return _writer is not None


def init_from_environment():
    directory = os.environ.get(ENV_VAR, "").strip()
    if directory:
        set_trace_dir(directory)


# --- what a compile writes ------------------------------------------------------------------


class recording_steps:
    """Around the tracer's run of one frame: records its steps for the viewer page when the
    trace is on and nobody else (bytegraph.trace) is listening."""

    def __init__(self, record):
        self.record = record
        self.recorder = None

    def __enter__(self):
        if _writer is None:
            return self
        from bytegraph._extension import _C

        if _C.record.attached() is not None:
            return self
        from bytegraph.viewer.events import EventAdapter
        from bytegraph.viewer.recorder import TraceRecorder

        self.recorder = TraceRecorder()
        _C.record.attach(EventAdapter(self.recorder))
        return self

    def __exit__(self, *exc_info):
        if self.recorder is not None:
            from bytegraph._extension import _C

            _C.record.detach()
            self.record.steps = self.recorder.trace()
        return False


def _call_stack(writer, code):
    """The user's call stack down to the frame being compiled (bytegraph's own frames left out)."""
    frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(_PACKAGE_DIR)]
    stack = [{"line": f.lineno, "name": f.name, "filename": writer.intern(f.filename), "loc": f.line}
             for f in frames[-20:]]
    stack.append({"line": code.co_firstlineno, "name": code.co_qualname,
                  "filename": writer.intern(code.co_filename), "loc": None})
    return stack


def _chromium_events(record, pid):
    events = []
    for name, start, duration in record.spans:
        common = {"name": f"bytegraph {name}", "cat": "bytegraph", "tid": 0, "pid": pid,
                  "args": {"frame": record.name, "compile_id": record.trace_id}}
        events.append({**common, "ph": "B", "ts": start * 1e6})
        events.append({**common, "ph": "E", "ts": (start + duration) * 1e6})
    return events


def _user_stack_text(user_stack):
    from bytegraph import _logging

    return _logging.user_stack_text(user_stack)


def _user_location(user_stack):
    if not user_stack:
        return None, None
    location = user_stack[-1].rpartition(" in ")[0]
    filename, _, line = location.rpartition(":")
    return (filename, int(line)) if line.isdigit() else (None, None)


def _graph_sizes(gm):
    import torch

    sizes = {}
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor):
            sizes[node.name] = [s if isinstance(s, int) else repr(s) for s in value.shape]
    return sizes


def _viewer_page(writer, record):
    trace = record.steps
    if trace is None or not trace.frames:
        return None
    path = writer.directory / "viewer" / f"frame_{record.frame_id}_{record.compile_id}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    trace.to_html(path)
    return path


def log_compile(record):
    """Write one compile (a `_compile_metrics.FrameCompile`) to the trace; then let the record
    drop its graphs and code."""
    writer = _writer
    try:
        if writer is None or record.code is None:
            return
        _write_compile(writer, record)
    except Exception as error:  # the trace must never break a compile
        print(f"bytegraph: writing the compile trace failed: {error!r}", file=sys.stderr)
    finally:
        record.release()


def _write_compile(writer, record):
    from bytegraph import _frame, _readable_code, bytecode

    code = record.code
    cid = (record.frame_id, record.compile_id)
    writer.emit("dynamo_start", {"stack": _call_stack(writer, code)}, compile_id=cid)
    for event in _chromium_events(record, os.getpid()):
        writer.emit("chromium_event", {}, payload=event, compile_id=cid)
    restart_reasons = []
    if record.graph_break is not None:
        brk = record.graph_break
        text = f"Graph break in {code.co_qualname} ({brk['kind']}): {brk['message']}"
        writer.emit("artifact", {"name": "dynamo_graph_break_reason", "encoding": "string"},
                    payload=f"{text}\nUser stack (outermost first):\n{_user_stack_text(brk['user_stack'])}",
                    compile_id=cid)
        restart_reasons.append(text)
    node_count = input_count = 0
    for name, gm in record.graph_modules:
        writer.emit("dynamo_output_graph", {"sizes": _graph_sizes(gm), "name": name},
                    payload=gm.print_readable(print_output=False), compile_id=cid)
        node_count += len(gm.graph.nodes)
        input_count += sum(1 for node in gm.graph.nodes if node.op == "placeholder")
    if record.new_code is not None:
        original = _readable_code.original_code(code)
        writer.emit("artifact", {"name": "generated_code", "encoding": "string"},
                    payload=_readable_code.source_and_original(record.new_code, original), compile_id=cid)
        for resume in record.resumes:
            writer.emit("artifact", {"name": "resume_function_" + _readable_code.identifier(resume.co_name),
                                     "encoding": "string"},
                        payload=_readable_code.python_source(resume)[0], compile_id=cid)
        writer.emit("artifact", {"name": "original_bytecode", "encoding": "string"},
                    payload=bytecode.dis(code), compile_id=cid)
        writer.emit("artifact", {"name": "modified_bytecode", "encoding": "string"},
                    payload=bytecode.dis(record.new_code), compile_id=cid)
        writer.emit("dynamo_cpp_guards_str", {}, payload="\n".join(record.guards), compile_id=cid)
        writer.emit("dynamo_guards", {}, payload=[{"code": guard} for guard in record.guards], compile_id=cid)
    page = _viewer_page(writer, record)
    if page is not None:
        writer.emit("link", {"name": "step-by-step trace (bytegraph viewer)", "url": page.resolve().as_uri()},
                    compile_id=cid)
    fail_file, fail_line = (None, None)
    fail_type = fail_reason = None
    if record.outcome == "failed":
        fail_type, _, fail_reason = record.failure.partition(": ")
        if record.graph_break is not None:
            fail_file, fail_line = _user_location(record.graph_break["user_stack"])
    try:
        cache_size = len(_frame.cache_entries(code))
    except Exception:
        cache_size = None
    metrics = {
        "co_name": code.co_name,
        "co_filename": code.co_filename,
        "co_firstlineno": code.co_firstlineno,
        "cache_size": cache_size,
        "guard_count": record.guard_count,
        "graph_op_count": record.op_count,
        "graph_node_count": node_count,
        "graph_input_count": input_count,
        "start_time": record.start_time,
        "entire_frame_compile_time_s": record.total,
        "backend_compile_time_s": record.phases["backend"],
        "code_gen_time_s": record.phases["codegen"],
        "tracing_time_s": record.phases["tracing"],
        "guard_build_time_s": record.phases["guards"],
        "restart_reasons": restart_reasons,
        "recompile_reason": "; ".join(record.recompile_reasons) or None,
        "fail_type": fail_type,
        "fail_reason": fail_reason,
        "fail_user_frame_filename": fail_file,
        "fail_user_frame_lineno": fail_line,
        "outcome": record.outcome,
    }
    writer.emit("compilation_metrics", metrics, compile_id=cid)
