"""Log artifacts: what bytegraph saw and did, as Python `logging` under `bytegraph.*`.

Switched by the environment variable BYTEGRAPH_LOGS, read when bytegraph is imported:

    BYTEGRAPH_LOGS="+bytegraph,graph_breaks,recompiles,guards,bytecode,graph_code,output_code"

or from code with `bytegraph.set_logs(graph_code=True, recompiles=True)`. A name turns its
artifact on at its own level; `+name` at DEBUG (for `bytecode`: the disassembly too). `all`
turns every artifact on; `bytegraph` / `+bytegraph` set the level of the `bytegraph` logger
itself (its warnings and debug messages), not the artifacts. TORCH_LOGS spellings mean the
same here: `dynamo` is `bytegraph`, `trace_bytecode` is `trace`.

Whichever way an artifact is turned on, it is the same logger (`bytegraph.<artifact>`) and
the same line prefix (`[bytegraph.<artifact>]`), so a handler a program adds to
`logging.getLogger("bytegraph.graph_breaks")` sees exactly what BYTEGRAPH_LOGS shows.

Everything is off by default, and a trace with the `trace` artifact off costs nothing
extra: the compile path asks `trace_sink()` once per trace, and the C++ interpreter tests
one pointer per instruction.
"""

import contextlib
import linecache
import logging
import os
import sys

ENV_VAR = "BYTEGRAPH_LOGS"
ROOT = "bytegraph"

# name: (logger, level when on, what it shows)
ARTIFACTS = {
    "trace": ("bytegraph.trace", logging.DEBUG,
              "one TRACE line per interpreted instruction: opcode, argument, symbolic stack"),
    "bytecode": ("bytegraph.bytecode", logging.INFO,
                 "each generated function (captured frames, resume functions) as Python source next to "
                 "the original; at DEBUG (+bytecode) also the ORIGINAL and MODIFIED disassembly"),
    "graph": ("bytegraph.graph", logging.INFO, "TRACED GRAPH: each graph as a node table"),
    "graph_code": ("bytegraph.graph_code", logging.INFO, "TRACED GRAPH: each graph as readable Python code"),
    "guards": ("bytegraph.guards", logging.INFO, "GUARDS of each new cache entry"),
    "recompiles": ("bytegraph.recompiles", logging.INFO,
                   "why a function is compiled again (the failed guard of the latest entry)"),
    "recompiles_verbose": ("bytegraph.recompiles_verbose", logging.INFO,
                           "why a function is compiled again: the failed guard of every cache entry"),
    "graph_breaks": ("bytegraph.graph_breaks", logging.INFO, "each graph break: reason and user stack"),
    "dynamic": ("bytegraph.dynamic", logging.INFO,
                "dynamic shapes: which sizes and ints became symbolic and why, each guard on them "
                "and each specialisation, with the user's source line"),
    "output_code": ("bytegraph.output_code", logging.INFO,
                    "the code a backend generated, where it has some (inductor's output code)"),
    "ddp": ("bytegraph.ddp", logging.INFO,
            "DDP SPLIT: how each graph compiled under DistributedDataParallel was split at gradient-bucket "
            "boundaries (each piece's parameters and size); at DEBUG (+ddp) also the split graph"),
}

# TORCH_LOGS names with the same meaning here.
ALIASES = {"dynamo": ROOT, "trace_bytecode": "trace"}

# The level of an artifact that is off: above every level a record can have.
_OFF = logging.CRITICAL + 10

trace_log = logging.getLogger(ARTIFACTS["trace"][0])
output_code_log = logging.getLogger(ARTIFACTS["output_code"][0])


class _StderrHandler(logging.StreamHandler):
    """Writes to the sys.stderr of the moment (so redirections and test capture see it), or
    to the stream `redirected_to` names while it is active."""

    def __init__(self):
        super().__init__(sys.stderr)
        self.target = None

    @property
    def stream(self):
        return self.target if self.target is not None else sys.stderr

    @stream.setter
    def stream(self, value):
        pass


class _Formatter(logging.Formatter):
    """`[bytegraph.graph_breaks] message`: the logger's name, multi-line messages kept as they are."""

    def format(self, record):
        record.logger_name = record.name
        return super().format(record)


_handler = _StderrHandler()
_handler.setFormatter(_Formatter("[%(logger_name)s] %(message)s"))


@contextlib.contextmanager
def redirected_to(stream):
    """Within the block, bytegraph's log lines go to `stream` (the demo prints them in order
    with its own output on stdout)."""
    previous = _handler.target
    _handler.target = stream
    try:
        yield
    finally:
        _handler.target = previous


def _canonical(name):
    return ALIASES.get(name, name)


def _on_level(name, value):
    if value is True:
        return ARTIFACTS[name][1] if name in ARTIFACTS else logging.INFO
    if value is False or value is None:
        return None
    if isinstance(value, int):
        return value
    raise TypeError(f"set_logs({name}=...) takes a bool, None or a logging level, got {value!r}")


def set_logs(**settings):
    """Turn log artifacts on or off (every one not named is turned off).

    Each keyword is an artifact name (see ARTIFACTS: trace, bytecode, graph, graph_code,
    guards, recompiles, recompiles_verbose, graph_breaks, dynamic, output_code, ddp), `bytegraph` (the
    package logger; `dynamo` is accepted for it, as torch._logging.set_logs names it) or
    `all`, with True (on at the artifact's level), False/None (off) or a logging level such
    as logging.DEBUG. A readable handler is installed on the `bytegraph` logger while
    anything is on.
    """
    unknown = sorted(name for name in settings if _canonical(name) not in valid_names())
    if unknown:
        raise ValueError(f"unknown log artifact(s) {', '.join(unknown)}; known: {', '.join(valid_names())}")
    levels = {}
    if "all" in settings:
        for name in ARTIFACTS:
            levels[name] = _on_level(name, settings["all"])
    for name, value in settings.items():
        if name != "all":
            levels[_canonical(name)] = _on_level(_canonical(name), value)
    _apply(levels)


def valid_names():
    return [ROOT, "all", *ARTIFACTS]


def parse_spec(spec):
    """`"+trace,graph"` -> {"trace": DEBUG, "graph": INFO}; raises ValueError on unknown names.

    TORCH_LOGS spellings are accepted where they mean the same (`+dynamo` is `+bytegraph`)."""
    levels = {}
    for token in spec.replace(" ", ",").split(","):
        token = token.strip()
        if not token:
            continue
        debug = token.startswith("+")
        name = _canonical(token.lstrip("+"))
        if name not in valid_names():
            known = ", ".join(valid_names() + sorted(ALIASES))
            raise ValueError(f"unknown log artifact {token.lstrip('+')!r} in {ENV_VAR}; known: {known}")
        targets = list(ARTIFACTS) if name == "all" else [name]
        for target in targets:
            levels[target] = logging.DEBUG if debug else _on_level(target, True)
    return levels


def _apply(levels):
    for name, (logger_name, _, _) in ARTIFACTS.items():
        level = levels.get(name)
        # An artifact not named is off even when the bytegraph logger is at DEBUG.
        logging.getLogger(logger_name).setLevel(level if level is not None else _OFF)
    root = logging.getLogger(ROOT)
    root_level = levels.get(ROOT)
    root.setLevel(root_level if root_level is not None else logging.WARNING)
    anything_on = any(level is not None for level in levels.values())
    if anything_on and _handler not in root.handlers:
        root.addHandler(_handler)
    elif not anything_on and _handler in root.handlers:
        root.removeHandler(_handler)


def enabled(name):
    """True if artifact `name` emits now."""
    logger_name, level, _ = ARTIFACTS[name]
    return logging.getLogger(logger_name).isEnabledFor(level)


def init_from_environment():
    """Apply BYTEGRAPH_LOGS (at import). A bad value warns instead of breaking the import."""
    root = logging.getLogger(ROOT)
    spec = os.environ.get(ENV_VAR, "")
    if not spec.strip():
        # Off by default, even under a root logger configured at INFO or DEBUG.
        if root.level == logging.NOTSET:
            root.setLevel(logging.WARNING)
        for logger_name, _, _ in ARTIFACTS.values():
            logger = logging.getLogger(logger_name)
            if logger.level == logging.NOTSET:
                logger.setLevel(_OFF)
        return
    try:
        levels = parse_spec(spec)
    except ValueError as error:
        root.setLevel(logging.WARNING)
        root.warning("bytegraph: ignoring %s: %s", ENV_VAR, error)
        return
    _apply(levels)


def _emit_trace(line):
    trace_log.debug("%s", line)


def trace_sink():
    """What the tracer's `log=` gets: a per-instruction callable, or None when the trace
    artifact is off (checked once per trace, so tracing with logs off costs nothing)."""
    return _emit_trace if trace_log.isEnabledFor(logging.DEBUG) else None


def user_stack_text(user_stack):
    """The tracer's user stack ("file:line in function", outermost first) as indented lines,
    each followed by its source line when the file is readable."""
    lines = []
    for entry in user_stack:
        lines.append(f"  {entry}")
        location = entry.rpartition(" in ")[0]
        filename, _, lineno = location.rpartition(":")
        source = linecache.getline(filename, int(lineno)).strip() if lineno.isdigit() else ""
        if source:
            lines.append(f"    {source}")
    return "\n".join(lines)


def graph_table(gm):
    """The graph as a table: opcode, name, target, args, kwargs (one row per node)."""
    rows = [("opcode", "name", "target", "args", "kwargs")]
    for node in gm.graph.nodes:
        rows.append((node.op, node.name, _target_name(node.target), repr(node.args), repr(node.kwargs)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _target_name(target):
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None)
    name = getattr(target, "__name__", None) or getattr(target, "__qualname__", None)
    if name is None:
        return repr(target)
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    if module and module.startswith("torch"):
        return f"torch.{name}" if module in ("torch", "torch._C._VariableFunctions") else f"{module}.{name}"
    return name


def graph_code_text(gm):
    """The graph as readable Python code with shapes (the `graph_code` artifact)."""
    return gm.print_readable(print_output=False).rstrip()


@contextlib.contextmanager
def output_code_capture(graph_name, backend_name):
    """Around a backend compile: log the code it generates (inductor's wrapper module,
    seen through GraphLowering.save_output_code, the hook torch's own tests use; it fires on
    fresh compiles and on FX-graph-cache hits). Free when output_code is off."""
    if not output_code_log.isEnabledFor(logging.INFO):
        yield
        return
    try:
        from torch._inductor.graph import GraphLowering
    except ImportError:  # a torch without inductor: nothing to show
        yield
        return
    codes = []
    previous = GraphLowering.save_output_code

    def save(code):
        codes.append(code)
        if previous is not None:
            previous(code)

    GraphLowering.save_output_code = save
    try:
        yield
    finally:
        GraphLowering.save_output_code = previous
        for code in codes:
            output_code_log.info("OUTPUT CODE %s (backend %s)\n%s", graph_name, backend_name, code)
