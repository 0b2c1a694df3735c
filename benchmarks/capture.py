"""What each system captures from a model: graphs, graph breaks, ops, frames left eager.

bytegraph: a CompileCounter backend counts graphs and ops; its loggers tell the breaks
("bytegraph.graph_breaks"), the frames that could not be split at a break and ran eagerly,
the frames it could not compile ("bytegraph" warnings), which run eagerly too (their
callees may still be captured on their own), and the recompilations ("bytegraph.recompiles").
torch: torch._dynamo.explain, or for a run of several calls a counting backend and Dynamo's
counters.

`bytegraph_capture`/`torch_capture` count one call; `capture_steps` runs a model's steps
(benchmarks.model_step: inference or a training step, called twice with the same shapes)
through either system and keeps what the zoo reports: graphs and ops of the first call, what
the second call compiled again, the breaks with their kind, message and user file:line.
"""

import contextlib
import logging
import re
import sys
import time
import traceback

import torch

from benchmarks import model_step

# Function names may hold spaces: resume functions are "foo2 (resumed at line 47)".
_BREAK = re.compile(r"Graph break in (?P<function>.+?) \((?P<kind>[a-z_]+)\): (?P<message>.*)")
_EAGER = re.compile(r"(?P<function>.+?) runs eagerly: (?P<message>.*)")
_RECOMPILE = re.compile(r"Recompiling function (?P<function>.+?) in (?P<where>\S+), triggered")
_LOCATION = re.compile(r"^(?P<message>.*) \(at (?P<where>[^()]*?)(?: in [^()]*)?\)$")


def _break_event(match, fallback_where=""):
    """{function, kind, message, where} of a logged break; `where` is the user's file:line."""
    message = match["message"]
    location = _LOCATION.match(message)
    where = fallback_where
    if location:
        message, where = location["message"], location["where"]
    return {"function": match["function"], "kind": match.groupdict().get("kind") or "", "message": message,
            "where": where}


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
        self.recompiles = []
        # The same, as {function, kind, message, where} records (benchmarks.zoo aggregates them).
        self.break_events = []
        self.eager_events = []

    def emit(self, record):
        text = record.getMessage()
        lines = text.splitlines() or [""]
        first_line = lines[0]
        if record.name == "bytegraph.graph_breaks":
            broke, eager = _BREAK.match(first_line), _EAGER.match(first_line)
            if broke:
                self.breaks.append(first_line)
                event = _break_event(broke, _innermost_stack_entry(lines[1:]))
                self.break_events.append(event)
                if _logged_from("_on_graph_break", record):
                    self.eager.append(first_line)
                    self.eager_events.append(dict(event, whole_frame=True))
            elif eager:
                self.eager.append(first_line)
                self.eager_events.append({"function": eager["function"], "kind": "not_split",
                                          "message": eager["message"], "where": ""})
        elif record.name == "bytegraph.recompiles":
            recompiled = _RECOMPILE.match(first_line)
            if recompiled:
                self.recompiles.append({"function": recompiled["function"], "where": recompiled["where"],
                                        "reasons": [line.strip(" -") for line in lines[1:4]]})
        elif record.levelno >= logging.WARNING:
            self.failures.append(first_line)


def _logged_from(function_name, record, depth=12):
    """Whether the log call came from (or through) `function_name`: a frame that raised
    Unsupported is reported there and runs eagerly as a whole, while a split frame's break is
    reported from the same helper on the way to being split."""
    if record.funcName == function_name:
        return True
    frame = sys._getframe(1)
    for _ in range(depth):
        if frame is None:
            return False
        if frame.f_code.co_name == function_name:
            return True
        frame = frame.f_back
    return False


def _innermost_stack_entry(stack_lines):
    """The last "file:line in function" line of a logged user stack (source lines are
    indented further)."""
    entries = [line.strip() for line in stack_lines if line.startswith("  ") and not line.startswith("    ")]
    return entries[-1].rsplit(" in ", 1)[0] if entries else ""


@contextlib.contextmanager
def bytegraph_events():
    """Collects bytegraph's graph breaks and compile failures while the block runs.

    Only the graph-break and recompile loggers are lowered to INFO: the graph and guard loggers stay quiet,
    since rendering graphs while they are enabled would be timed as tracing.
    """
    root = logging.getLogger("bytegraph")
    loud = [logging.getLogger("bytegraph.graph_breaks"), logging.getLogger("bytegraph.recompiles")]
    saved = (root.level, root.propagate, [logger.level for logger in loud])
    handler = _Collect()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    root.propagate = False
    for logger in loud:
        logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(saved[0])
        root.propagate = saved[1]
        for logger, level in zip(loud, saved[2]):
            logger.setLevel(level)


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


# ---- a model's steps through either system (the zoo) ---------------------------------------


def _error_record(error):
    text = f"{type(error).__name__}: {error}".strip()
    return {"error": text.splitlines()[0][:400] if text else type(error).__name__,
            "traceback": traceback.format_exc()[-2500:]}


def _run_steps(call, module, mode, calls, counts):
    """Runs each (args, kwargs) of `calls` as a step; `counts()` is read after each. Returns
    (records, per-call counts, seconds, error record or None)."""
    records, after, seconds = [], [], []
    for i, (args, kwargs) in enumerate(calls):
        start = time.perf_counter()
        failed = None
        try:
            records.append(model_step.step(call, module, mode, args, kwargs, seed=i))
        except Exception as error:  # recorded against the system: eager mode ran this step
            failed = dict(_error_record(error), call=i + 1)
        seconds.append(time.perf_counter() - start)
        after.append(counts())
        if failed:
            return records, after, seconds, failed
    return records, after, seconds, None


def _second_call(after, key):
    return after[1][key] - after[0][key] if len(after) > 1 else None


def bytegraph_steps(module, mode, calls, *, verify=False):
    """`calls` through `bytegraph.compile(module)` with a CompileCounter backend:
    (step records, capture summary). With `verify`, config.verify_correctness is on."""
    import bytegraph
    from bytegraph.testing import CompileCounter

    bytegraph.reset()
    counter = CompileCounter()
    compiled = bytegraph.compile(module, backend=counter)
    with bytegraph_events() as events, bytegraph.config.patch(verify_correctness=verify):
        def counts():
            return {"graphs": counter.frame_count, "ops": counter.op_count, "breaks": len(events.breaks),
                    "eager_frames": len(events.eager) + len(events.failures),
                    "recompiles": len(events.recompiles), "break_events": len(events.break_events)}

        records, after, seconds, error = _run_steps(compiled, module, mode, calls, counts)
    bytegraph.reset()
    first = after[0] if after else counts()
    summary = {
        "graphs": first["graphs"], "ops": first["ops"], "breaks": first["breaks"],
        "eager_frames": first["eager_frames"],
        "recompiles": _second_call(after, "recompiles"),  # guard failures on the second call
        "second_call_graphs": _second_call(after, "graphs"),
        "second_call_breaks": _second_call(after, "breaks"),
        "first_call_recompiles": first["recompiles"],  # entries for other instances of the same code
        "seconds": seconds,
        "break_events": events.break_events[:first["break_events"]],
        "eager_events": events.eager_events,
        "failures": events.failures[:10],
        "second_call_recompile_reasons": events.recompiles[first["recompiles"]:][:10],
    }
    if error:
        summary["error"] = error
    return records, summary


def torch_steps(module, mode, calls):
    """`calls` through `torch.compile(module)` with a counting backend: (step records,
    capture summary). Breaks from Dynamo's counters (one per break, keyed by reason)."""
    from torch._dynamo.testing import CompileCounter
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    counter = CompileCounter()
    compiled = torch.compile(module, backend=counter)

    def counts():
        return {"graphs": counter.frame_count, "ops": counter.op_count,
                "breaks": sum(counters["graph_break"].values())}

    records, after, seconds, error = _run_steps(compiled, module, mode, calls, counts)
    reasons = counters["graph_break"].most_common(5)
    torch._dynamo.reset()
    first = after[0] if after else counts()
    summary = {
        "graphs": first["graphs"], "ops": first["ops"], "breaks": first["breaks"],
        "recompiles": _second_call(after, "graphs"),
        "second_call_graphs": _second_call(after, "graphs"),
        "seconds": seconds,
        "break_reasons": [[" ".join(str(reason).split())[:300], count] for reason, count in reasons],
    }
    if error:
        summary["error"] = error
    return records, summary


def generate_steps(system, model, prompt, options, *, calls=2):
    """`model.generate(prompt, **options)` `calls` times with `model.forward` compiled by
    `system` and a counting backend. The first generate() compiles for the growing sequence
    (its recompiles are counted); later ones must compile nothing."""
    forward = model.forward
    outputs, after, seconds, error = [], [], [], None
    if system == "bytegraph":
        import bytegraph
        from bytegraph.testing import CompileCounter

        bytegraph.reset()
        counter = CompileCounter()
        model.forward = bytegraph.compile(forward, backend=counter)
        events_context = bytegraph_events()
    else:
        from torch._dynamo.testing import CompileCounter
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        counters.clear()
        counter = CompileCounter()
        model.forward = torch.compile(forward, backend=counter)
        events_context = contextlib.nullcontext()
    with events_context as events:
        def counts():
            if events is None:
                return {"graphs": counter.frame_count, "ops": counter.op_count,
                        "breaks": sum(counters["graph_break"].values()), "recompiles": counter.frame_count}
            return {"graphs": counter.frame_count, "ops": counter.op_count, "breaks": len(events.breaks),
                    "recompiles": len(events.recompiles), "eager_frames": len(events.eager) + len(events.failures)}

        for i in range(calls):
            start = time.perf_counter()
            try:
                with torch.no_grad():
                    outputs.append(model.generate(prompt, **options))
            except Exception as failure:
                error = dict(_error_record(failure), call=i + 1)
            seconds.append(time.perf_counter() - start)
            after.append(counts())
            if error:
                break
    model.forward = forward
    first = after[0]
    summary = {
        "graphs": first["graphs"], "ops": first["ops"], "breaks": first["breaks"],
        "eager_frames": first.get("eager_frames"),
        "first_call_recompiles": first["recompiles"] if events is not None else max(first["graphs"] - 1, 0),
        "recompiles": _second_call(after, "recompiles"),
        "second_call_graphs": _second_call(after, "graphs"),
        "seconds": seconds,
        "outputs": outputs,
    }
    if events is not None:
        summary["break_events"] = events.break_events
        summary["eager_events"] = events.eager_events
        summary["failures"] = events.failures[:10]
    else:
        summary["break_reasons"] = [[" ".join(str(reason).split())[:300], count]
                                    for reason, count in counters["graph_break"].most_common(5)]
        torch._dynamo.reset()
    if error:
        summary["error"] = error
    return summary
