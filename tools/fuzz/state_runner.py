"""Runs one --mutate-state program (state_generator.py) eagerly and compiled, changing its
state between calls, and says whether the compiled function kept up.

Each run executes the program into a fresh namespace (the same program built twice, or
once per backend) and makes the same calls, all with the first input set:

    call; call again (nothing changed); then for each of MUTATIONS in order:
    mutate; call; call again (nothing changed since the change)

After every call the runs must agree, as in the default mode (runner.judge): exception,
printed output, result, arguments and globals afterwards, and torch's global state. A
compiled function that returns what it returned before the change has a missing guard.

Verdicts: `wrong` or `internal` (as in runner.py); `recompile` where the runs agree but a
call made again with nothing changed compiled another graph (the counting backend's
frame_count went up during it): a guard that fails on the state it was compiled for. The
detail names the call ("after mutate_parameter_replaced, call again") and, for a recompile,
the failed guard bytegraph logged.

Global torch state a program changes is entered on its RESTORE stack, closed after each
run; a program that leaves torch's state changed anyway is an error of the generator.
"""

import contextlib
import linecache
import logging

import torch

import bytegraph
from bytegraph import _frame
from tools.fuzz import backends
from tools.fuzz.runner import Outcome, call_and_record, judge, load, warm_started

RECOMPILES_LOGGER = "bytegraph.recompiles"


def run_state_program(source, backend_names=backends.DEFAULT, filename="<fuzz program>"):
    try:
        return _compare_runs(source, backend_names, filename)
    finally:
        linecache.cache.pop(filename, None)
        _reset_torch_state()


def _compare_runs(source, backend_names, filename):
    eager = run_steps(source, filename, None)
    outcome = Outcome("ok", calls=len(eager), eager_errors=sum(step.call.raised is not None for step in eager))
    recompile = None
    for position, name in enumerate(backend_names):
        counter, steps = _run_compiled(source, filename, name)
        if position == 0:
            outcome.graphs, outcome.ops = counter.frame_count, counter.op_count
        for number, (expected, actual) in enumerate(zip(eager, steps)):
            verdict, detail = judge(expected.call, actual.call)
            if verdict != "ok":
                outcome.verdict, outcome.backend, outcome.variant = verdict, name, number
                outcome.detail = f"{actual.label}: {detail}"
                return outcome
            if actual.repeated and actual.new_graphs and recompile is None:
                recompile = (name, number, f"{actual.label}: compiled {actual.new_graphs} new graph(s) though "
                                           f"nothing changed; {actual.reason or 'no guard failure logged'}")
    if recompile is not None:
        outcome.verdict = "recompile"
        outcome.backend, outcome.variant, outcome.detail = recompile
    return outcome


class Step:
    """One call of a run: what it did, and (compiled) how many graphs it compiled."""

    def __init__(self, label, repeated, call, new_graphs=0, reason=""):
        self.label, self.repeated, self.call = label, repeated, call
        self.new_graphs, self.reason = new_graphs, reason


def run_steps(source, filename, compile_with=None, counter=None, module=False):
    """The program's calls and changes, run once: eagerly, or with fn wrapped by compile_with
    (graphs counted by `counter`); a list of Step. `module`: see runner.load."""
    _reset_torch_state()
    namespace = load(source, filename, module)
    fn = namespace["fn"] if compile_with is None else compile_with(namespace["fn"])
    steps = []

    def call(label, repeated):
        before = counter.frame_count if counter is not None else 0
        with _recompile_reasons() as reasons:
            record = _call(fn, namespace)
        new_graphs = (counter.frame_count - before) if counter is not None else 0
        steps.append(Step(label, repeated, record, new_graphs, "; ".join(reasons)))

    try:
        call("first call", False)
        call("call again", True)
        for mutation in namespace["MUTATIONS"]:
            torch.manual_seed(0)
            mutation()
            call(f"after {mutation.__name__}", False)
            call(f"after {mutation.__name__}, call again", True)
    finally:
        namespace["RESTORE"].close()
    left = _changed_torch_state()
    if left:
        raise RuntimeError(f"the program left torch's global state changed: {left}")
    return steps


def _run_compiled(source, filename, backend_name):
    if backend_name == "warm_start":
        return warm_started(
            lambda: run_steps(source, filename, lambda fn: bytegraph.compile(fn, backend="eager"), module=True))
    counter, options = backends.make(backend_name)
    bytegraph.reset()
    try:
        with bytegraph.config.patch(suppress_errors=False), _frame.raise_on_compile_error(True):
            steps = run_steps(source, filename, lambda fn: bytegraph.compile(fn, backend=counter, **options), counter)
    finally:
        bytegraph.reset()
    return counter, steps


def _call(fn, namespace):
    torch.manual_seed(0)  # a program drawing random numbers draws the same ones in every run
    args, kwargs = namespace["make_inputs"](0)
    return call_and_record(fn, namespace, args, kwargs, torch_state=_torch_state())


# ---- torch's global state --------------------------------------------------------------------


def _torch_state():
    """What a call must leave as it found it (grad mode is in every record already)."""
    return {"inference_mode": torch.is_inference_mode_enabled(), "default_dtype": torch.get_default_dtype(),
            "autocast": torch.is_autocast_enabled("cpu"), "autocast_dtype": torch.get_autocast_dtype("cpu"),
            "deterministic": torch.are_deterministic_algorithms_enabled(),
            "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled()}


_DEFAULTS = {"grad_enabled": True, "inference_mode": False, "default_dtype": torch.float32, "autocast": False,
             "autocast_dtype": torch.bfloat16, "deterministic": False, "deterministic_warn_only": False}


def _changed_torch_state():
    state = dict(_torch_state(), grad_enabled=torch.is_grad_enabled())
    return {name: value for name, value in state.items() if _DEFAULTS[name] != value}


def _reset_torch_state():
    """torch's defaults, whatever a program (or one that failed half-way) left behind."""
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(False)
    torch.set_autocast_enabled("cpu", False)
    torch.set_autocast_dtype("cpu", torch.bfloat16)


@contextlib.contextmanager
def _recompile_reasons():
    """The guard failures bytegraph logs while the block runs (why it compiled again)."""
    logger = logging.getLogger(RECOMPILES_LOGGER)
    reasons = []

    class Collect(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            guard = message.split("guard failure:", 1)[-1]  # not the function's name and place
            reasons.append("failed guard: " + " ".join(guard.replace("- ", "", 1).split()))

    handler = Collect()
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield reasons
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
