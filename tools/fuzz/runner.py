"""Runs one program eagerly and compiled, and says whether they agree.

The program's source is executed into a fresh module namespace per run (one eager run,
one per backend), so each run starts from the same globals. Each run calls `fn` on every
input set of the program in order, on one compiled function, so later calls cross the
guards of earlier compiles. For every call the runs must agree on: the exception raised
(its type), the printed output, the result, the arguments and globals afterwards (values,
identity, objects' attributes, module state), and, where inputs require grad, the
gradients of a backward pass through the result.

Verdicts: `ok`; `wrong` (any disagreement); `internal` (the compiled run raised something
bytegraph produced where eager raised nothing or another type, with errors not suppressed).
A process-level crash is detected by the batch driver (batch.py), not here.
"""

import builtins
import contextlib
import dataclasses
import io
import linecache
import os
import sys
import tempfile
import types

import torch

import bytegraph
from bytegraph import _compile_metrics, _frame, _warm_start
from bytegraph.exc import BytegraphError, InternalError, Unsupported
from tools.fuzz import backends
from tools.fuzz.compare import difference, snapshot

_BYTEGRAPH_DIR = os.path.join(os.path.dirname(os.path.abspath(bytegraph.__file__)), "")
_TORCH_DIR = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "")
_STDLIB_DIR = os.path.join(os.path.dirname(os.path.abspath(os.__file__)), "")
_MODULE_NAME = "fuzz_program"
_HIDDEN_GLOBALS = {"F", "VARIANTS", "RESTORE", "MUTATIONS"}  # the last two: --mutate-state programs


@dataclasses.dataclass
class Outcome:
    verdict: str  # ok | wrong | internal | crash
    detail: str = ""
    backend: str = None
    variant: int = None
    graphs: int = 0  # graphs the first backend compiled
    ops: int = 0  # ops in them
    calls: int = 0
    eager_errors: int = 0  # calls that raised eagerly (on purpose, or a generator slip)

    def to_dict(self):
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Call:
    stdout: str
    raised: str  # the exception's type name, or None
    internal: bool
    message: str
    state: tuple  # snapshot of result, arguments, globals


def run_program(source, backend_names=backends.DEFAULT, filename="<fuzz program>"):
    """Compares the eager run with one compiled run per backend; returns an Outcome."""
    try:
        return _compare_runs(source, backend_names, filename)
    finally:
        linecache.cache.pop(filename, None)  # a worker runs thousands of programs


def _compare_runs(source, backend_names, filename):
    eager = _run(source, filename, None)
    outcome = Outcome("ok", calls=len(eager), eager_errors=sum(c.raised is not None for c in eager))
    for position, name in enumerate(backend_names):
        counter, calls = _run_compiled(source, filename, name)
        if position == 0:
            outcome.graphs, outcome.ops = counter.frame_count, counter.op_count
        for variant, (expected, actual) in enumerate(zip(eager, calls)):
            verdict, detail = judge(expected, actual)
            if verdict != "ok":
                outcome.verdict, outcome.detail, outcome.backend, outcome.variant = verdict, detail, name, variant
                return outcome
    return outcome


def judge(expected, actual):
    """(verdict, detail) for one call: eager's record against the compiled one's."""
    if expected.raised != actual.raised:
        verdict = "internal" if actual.internal else "wrong"
        return verdict, f"eager raised {expected.raised}, compiled raised {actual.message or actual.raised}"
    if expected.stdout != actual.stdout:
        return "wrong", f"printed output differs:\n--- eager\n{expected.stdout}--- compiled\n{actual.stdout}"
    found = difference(expected.state, actual.state, "call")
    if found and expected.raised:
        found = f"both raised {expected.message[:120]}; {found}"
    return ("wrong", found) if found else ("ok", "")


def _run(source, filename, compile_with, module=False):
    namespace = load(source, filename, module)
    fn = namespace["fn"] if compile_with is None else compile_with(namespace["fn"])
    return [_call(fn, namespace, variant) for variant in range(len(namespace["VARIANTS"]))]


def _run_compiled(source, filename, backend_name):
    if backend_name == "warm_start":
        return warm_started(
            lambda: _run(source, filename, lambda fn: bytegraph.compile(fn, backend="eager"), module=True))
    counter, options = backends.make(backend_name)
    bytegraph.reset()
    try:
        with bytegraph.config.patch(suppress_errors=False), _frame.raise_on_compile_error(True):
            calls = _run(source, filename, lambda fn: bytegraph.compile(fn, backend=counter, **options))
    finally:
        bytegraph.reset()
    return counter, calls


def warm_started(run_once):
    """Runs `run_once` (which loads the program as a module and compiles it with "eager" by
    name) twice with warm-start records on: the first run writes them, the second starts as a
    new process would (a fresh module, no entries) and installs the recorded entries where
    their guards pass. (counts, the second run's result): the one compared; counts'
    frame_count and op_count are the entries installed from records and their graphs' ops. The
    program is importable as a module meanwhile, so that its functions and classes can be
    recorded by name."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="fuzz-warm-start-") as records:
        try:
            with bytegraph.config.patch(suppress_errors=False, warm_start_dir=records), \
                    _frame.raise_on_compile_error(True):
                for _ in range(2):
                    bytegraph.reset()
                    before = _warm_start.stats.loaded
                    result = run_once()
                    ops = sum(record.op_count for record in _compile_metrics.records()
                              if record.phases["tracing"] == 0)
                    counts = types.SimpleNamespace(frame_count=_warm_start.stats.loaded - before, op_count=ops)
                    runs.append((counts, result))
        finally:
            sys.modules.pop(_MODULE_NAME, None)
            bytegraph.reset()
    return runs[1]


def load(source, filename, module=False):
    """The program executed as a module (registered in sys.modules where `module`); its
    source registered for tracebacks and logs."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec")
    if module:
        program = types.ModuleType(_MODULE_NAME)
        sys.modules[_MODULE_NAME] = program
        namespace = program.__dict__
        namespace.update({"__file__": filename, "__builtins__": builtins})
    else:
        namespace = {"__name__": _MODULE_NAME, "__file__": filename, "__builtins__": builtins}
    torch.manual_seed(0)  # the Net's initial weights
    exec(code, namespace)
    return namespace


def _call(fn, namespace, variant):
    torch.set_grad_enabled(True)  # whatever an earlier program left behind
    args, kwargs = namespace["make_inputs"](variant)
    return call_and_record(fn, namespace, args, kwargs)


def call_and_record(fn, namespace, args, kwargs, **more_state):
    """Calls fn; its record: printed output, exception, and the snapshot of the result,
    arguments, globals and grad mode afterwards (and `more_state`, where given)."""
    differentiable = any(t.requires_grad for t in _tensors_in((args, kwargs)))
    printed = io.StringIO()
    result, error = None, None
    with contextlib.redirect_stdout(printed):
        try:
            result = fn(*args, **kwargs)
        except Exception as caught:  # compared with the other run
            error = caught
    if error is None and differentiable:
        error = _backward(result)
    # Grad mode is process state too: a call must leave it as it found it, raising or not.
    state = snapshot({"result": result, "args": args, "kwargs": kwargs, "globals": _globals(namespace),
                      "grad_enabled": torch.is_grad_enabled(), **more_state})
    return Call(printed.getvalue(), None if error is None else type(error).__name__,
                error is not None and is_internal(error), _describe(error), state)


def _backward(result):
    """Backpropagates from every output tensor that requires grad; returns what it raised.

    Only for programs whose inputs require grad: those write nothing in place, while other
    programs may write in place to a value saved for backward (through the module's
    parameters), which eager reports at backward() and AOTAutograd when compiling."""
    outputs = [t for t in _tensors_in(result) if t.requires_grad and t.is_floating_point()]
    if not outputs:
        return None
    try:
        sum(t.sum() for t in outputs).backward()
    except Exception as caught:  # compared like an exception of the call
        return caught
    return None


def _tensors_in(value, depth=0):
    if depth > 4:
        return []
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v, depth + 1)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_in(v, depth + 1)]
    return []


def _globals(namespace):
    """The program's state: its globals that are data (not functions, classes, modules)."""
    return {name: value for name, value in namespace.items()
            if not name.startswith(("__", "FUZZ_")) and name not in _HIDDEN_GLOBALS
            and (isinstance(value, torch.nn.Module)
                 or not isinstance(value, (types.FunctionType, type, types.ModuleType, types.BuiltinFunctionType)))}


def is_internal(error):
    """Raised by bytegraph itself: its error types, or raised in its own Python code."""
    if isinstance(error, (Unsupported, InternalError, BytegraphError)):
        return True
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    for filename in reversed(frames):
        path = os.path.abspath(filename) if not filename.startswith("<") else filename
        if path.startswith((_TORCH_DIR, _STDLIB_DIR)):
            continue
        return path.startswith(_BYTEGRAPH_DIR)
    return False


def _describe(error):
    if error is None:
        return ""
    text = f"{type(error).__name__}: {error}"
    return text if len(text) < 2000 else text[:2000] + "..."
