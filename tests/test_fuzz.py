"""The differential fuzzer (tools/fuzz): the CI slice of generated programs, the fuzzer's
own machinery (it must notice a miscompile, a crash, a hang; it must capture something),
and every regression program it found (tests/fuzz_regressions/).

The slice runs CI_PROGRAMS programs of CI_SEED in a worker process, each eagerly and
compiled with the counting backends (aot_eager on a few), across input sets that cross
guards. A failure fails the test unless it is a known bug (tools/fuzz/known_bugs.py, each
with its strict-xfail regression program).

The --mutate-state mode (state_generator.py, state_runner.py) has its own slice of
STATE_PROGRAMS programs: state outside the function changed between calls.
"""

import ast
import os
import pathlib
import sys

import pytest
import torch

from tools.fuzz import backends, known_bugs, runner, shrinker, state_generator, state_runner
from tools.fuzz.batch import Job, WorkerPool
from tools.fuzz.campaign import run_campaign
from tools.fuzz.compare import difference
from tools.fuzz.generator import generate

CI_PROGRAMS = 200
CI_SEED = 0
STATE_PROGRAMS = 40
REGRESSIONS = sorted(pathlib.Path(shrinker.REGRESSIONS_DIR).glob("*.py"))

SIMPLE = '''
import torch

LOG = []


def fn(a):
    LOG.append(a.shape[0])
    return torch.relu(a) * 2, a.shape


VARIANTS = [0, 1]


def make_inputs(variant):
    return (torch.randn(3 + variant, 4, generator=torch.Generator().manual_seed(variant)),), {}
'''


# A --mutate-state program: fn reads a global, which the mutation rebinds between calls.
STATEFUL = '''
import contextlib

import torch

RESTORE = contextlib.ExitStack()
SCALE = 0.5
CALLS = 0


def fn(a):
    return torch.relu(a) * SCALE


def mutate_global_rebound():
    global SCALE
    SCALE = 2.0


MUTATIONS = [mutate_global_rebound]
VARIANTS = [3]


def make_inputs(variant):
    return (torch.randn(VARIANTS[variant], 4, generator=torch.Generator().manual_seed(variant)),), {}
'''


@pytest.fixture(scope="module")
def ci_slice():
    return run_campaign(CI_PROGRAMS, CI_SEED, backends.DEFAULT, occasional_fraction=0.05, jobs=2, timeout=60)


def _describe(failures):
    return "\n".join(f"{f.program.name}: {shrinker.signature(f.outcome)}\n{f.outcome.detail[:600]}" for f in failures)


# ---- the CI slice ----------------------------------------------------------------------------


def test_the_slice_has_no_failures_but_known_bugs(ci_slice):
    unknown = ci_slice.unknown_failures()
    assert not unknown, f"{len(unknown)} failures (reproduce: python -m tools.fuzz --seed {CI_SEED} " \
                        f"--start <index> --n 1):\n{_describe(unknown)}"
    assert ci_slice.counts["crash"] == ci_slice.known["crash"]
    assert ci_slice.counts["error"] == 0, "programs the runner could not run"


def test_the_slice_exercises_compiled_capture(ci_slice):
    # A fuzzer whose programs capture nothing compares eager with eager.
    assert ci_slice.programs == CI_PROGRAMS
    assert ci_slice.captured >= 0.85 * CI_PROGRAMS, ci_slice.text()
    assert ci_slice.graphs >= 2 * CI_PROGRAMS and ci_slice.ops >= 10 * CI_PROGRAMS, ci_slice.text()
    # Programs raise on purpose now and then, but mostly run: the generator writes valid code.
    assert ci_slice.eager_errors <= 0.2 * ci_slice.calls, ci_slice.text()


# ---- the generator ---------------------------------------------------------------------------


def test_programs_are_a_function_of_seed_and_index():
    assert generate(3, 14).source == generate(3, 14).source
    assert generate(3, 14).source != generate(3, 15).source != generate(4, 14).source


def test_programs_use_the_constructs_they_are_meant_to():
    sources = "\n".join(generate(11, i).source.split("def fn(", 1)[1] for i in range(120))
    for construct in ("if ", "for ", "while ", "try:", "except ", "raise ", "nonlocal ", "lambda ", "yield ",
                      ".append(", "shared_box.", "net(", "print(", "*rest", "**extra", "_(", ".sum() > 0",
                      "with torch.no_grad()", ".shape"):
        assert construct in sources, f"no generated program contains {construct!r}"


def test_generated_programs_are_valid_python():
    for index in range(60):
        ast.parse(generate(12, index).source)


# ---- the runner: it must notice what it is there to notice --------------------------------------


def _wrong_backend(gm, example_inputs):
    def run(*args):
        return [out + 1 if getattr(out, "is_floating_point", lambda: False)() else out for out in gm(*args)]

    return run


def test_a_miscompiled_result_is_reported(monkeypatch):
    from bytegraph.testing import CompileCounterWithBackend

    monkeypatch.setitem(backends.CONFIGS, "miscompiling", (lambda: CompileCounterWithBackend(_wrong_backend), {}))
    outcome = runner.run_program(SIMPLE, ("eager", "miscompiling"))
    assert outcome.verdict == "wrong" and outcome.backend == "miscompiling", outcome
    assert "values differ" in outcome.detail


def test_a_correct_program_is_ok_and_its_capture_counted():
    outcome = runner.run_program(SIMPLE, backends.DEFAULT)
    assert outcome.verdict == "ok", outcome.detail
    assert outcome.graphs >= 1 and outcome.ops >= 2 and outcome.calls == 2


def test_a_lost_side_effect_is_reported():
    # Compiled, the global list is not appended to: the state after the call differs.
    source = SIMPLE.replace("LOG.append(a.shape[0])", "LOG.append(a.shape[0]) if not __import__('bytegraph')"
                            ".is_compiling() else None")
    outcome = runner.run_program(source, ("eager",))
    assert outcome.verdict == "wrong" and "LOG" in outcome.detail, outcome


def test_crashes_and_hangs_are_caught_in_the_worker():
    crash = SIMPLE.replace("LOG.append(a.shape[0])", "__import__('os').abort()")
    hang = SIMPLE.replace("LOG.append(a.shape[0])", "__import__('time').sleep(60)")
    with WorkerPool(jobs=1, timeout=3) as pool:
        outcomes = {job.id: outcome for job, outcome, _ in pool.run([
            Job("crash", crash, ("eager",)), Job("hang", hang, ("eager",)), Job("fine", SIMPLE, ("eager",))])}
    assert outcomes["crash"].verdict == "crash" and "died" in outcomes["crash"].detail
    assert outcomes["hang"].verdict == "crash" and "hang" in outcomes["hang"].detail
    assert outcomes["fine"].verdict == "ok"  # the pool replaced the dead worker


# ---- the --mutate-state mode -------------------------------------------------------------------


def _stale_backend(gm, example_inputs):
    """Every graph returns what the first one returned on its first call: stale after any change."""
    first = _stale_backend.first

    def run(*args):
        if not first:
            first.append(gm(*args))
        return first[0]

    return run


def test_a_stale_result_after_a_change_of_state_is_reported(monkeypatch):
    from bytegraph.testing import CompileCounterWithBackend

    monkeypatch.setattr(_stale_backend, "first", [], raising=False)
    monkeypatch.setitem(backends.CONFIGS, "stale", (lambda: CompileCounterWithBackend(_stale_backend), {}))
    # The same stale backend passes the default mode: its stale results show only after a change.
    assert runner.run_program(STATEFUL, ("stale",)).verdict == "ok"
    _stale_backend.first.clear()
    outcome = state_runner.run_state_program(STATEFUL, ("eager", "stale"))
    assert outcome.verdict == "wrong" and outcome.backend == "stale", outcome
    assert outcome.detail.startswith("after mutate_global_rebound: ") and "values differ" in outcome.detail


def test_a_state_program_that_keeps_up_is_ok_and_recompiles_once_per_change():
    outcome = state_runner.run_state_program(STATEFUL, backends.DEFAULT)
    assert outcome.verdict == "ok", outcome.detail
    assert outcome.graphs == 2 and outcome.calls == 4, outcome  # the first call, the first after the change


def test_a_recompile_with_nothing_changed_is_reported():
    # fn writes the global it reads: each call fails the guard its compile installed.
    source = STATEFUL.replace("    return torch.relu(a) * SCALE",
                              "    global CALLS\n    CALLS += 1\n    return torch.relu(a) * SCALE + CALLS")
    outcome = state_runner.run_state_program(source, ("eager",))
    assert outcome.verdict == "recompile", outcome
    assert outcome.detail.startswith("call again: ") and "CALLS" in outcome.detail, outcome.detail


def test_a_state_program_leaves_torch_global_state_as_it_found_it():
    source = STATEFUL.replace("    global SCALE\n    SCALE = 2.0", "    RESTORE.enter_context(torch.no_grad())\n"
                              "    RESTORE.callback(torch.set_default_dtype, torch.get_default_dtype())\n"
                              "    torch.set_default_dtype(torch.float64)\n"
                              '    RESTORE.enter_context(torch.autocast("cpu"))')
    assert state_runner.run_state_program(source, ("eager",)).verdict == "ok"
    assert torch.is_grad_enabled() and torch.get_default_dtype() == torch.float32
    assert not torch.is_autocast_enabled("cpu")
    # One that changes it outside RESTORE is an error of the program, and is undone all the same.
    leaky = STATEFUL.replace("    global SCALE\n    SCALE = 2.0", "    torch.use_deterministic_algorithms(True)")
    with pytest.raises(RuntimeError, match="deterministic"):
        state_runner.run_state_program(leaky, ("eager",))
    assert not torch.are_deterministic_algorithms_enabled()


def test_state_programs_are_valid_and_a_function_of_seed_and_index():
    assert state_generator.generate(3, 14).source == state_generator.generate(3, 14).source
    assert state_generator.generate(3, 14).source != state_generator.generate(3, 15).source
    assert generate(3, 14).source != state_generator.generate(3, 14).source
    for index in range(60):
        ast.parse(state_generator.generate(12, index).source)


def test_state_programs_make_every_kind_of_change():
    sources = "\n".join(state_generator.generate(11, i).source for i in range(300))
    for kind in ("parameter_replaced", "buffer_replaced", "tensor_attribute_replaced", "state_dict_loaded_with_assign",
                 "module_list_appended", "module_dict_key_added", "sequential_item_replaced", "submodule_replaced",
                 "method_assigned_on_instance", "forward_assigned_on_instance", "activation_swapped",
                 "namespace_attribute_added", "dataclass_attribute_changed", "instance_attribute_deleted",
                 "global_rebound", "closure_cell_rebound", "class_attribute_changed", "base_method_patched_via_super",
                 "callable_in_dict_swapped", "callable_in_list_swapped", "callable_in_class_swapped",
                 "autocast_entered", "default_dtype_changed", "deterministic_algorithms_toggled",
                 "grad_mode_changed", "inference_mode_entered"):
        assert f"_{kind}():" in sources, f"no generated program makes the change {kind}"
    for construct in ("load_state_dict(", "assign=True", ".append(", "super().", "functools.partial(", "operator.",
                      "len", "types.SimpleNamespace(", "@dataclasses.dataclass", "nonlocal ", "torch.autocast(",
                      "torch.set_default_dtype(", "torch.use_deterministic_algorithms(", "torch.inference_mode()"):
        assert construct in sources, f"no generated program contains {construct!r}"


def test_state_changes_change_what_the_function_returns():
    # A change the function does not see tests no guard: eagerly, most must change the result.
    changed = total = 0
    for index in range(30):
        steps = state_runner.run_steps(state_generator.generate(13, index).source, "<state program>", None)
        before = steps[1].call
        for step in steps[2:]:
            if not step.repeated:
                total += 1
                changed += bool(before.raised != step.call.raised or difference(before.state, step.call.state))
            before = step.call
    assert changed >= 0.9 * total, f"{changed} of {total} changes changed the result"


def test_mutate_state_slice():
    summary = run_campaign(STATE_PROGRAMS, CI_SEED, backends.DEFAULT, occasional_fraction=0.0, jobs=1, timeout=60,
                           mode=state_generator.MODE)
    assert summary.counts["error"] == 0, "programs the runner could not run"
    assert summary.captured >= 0.9 * STATE_PROGRAMS, summary.text()
    unknown = summary.unknown_failures()
    assert not unknown, f"{len(unknown)} failures (reproduce: python -m tools.fuzz --mutate-state --seed {CI_SEED} " \
                        f"--start <index> --n 1):\n{_describe(unknown)}"


@pytest.mark.parametrize("mode", ["default", state_generator.MODE])
def test_warm_start_slice(mode):
    """Each program runs twice with warm-start records (the second as a new process would,
    installing the first's entries where their guards pass), compared with eager."""
    programs = 30 if mode == "default" else 20
    summary = run_campaign(programs, CI_SEED, ("warm_start",), occasional_fraction=0.0, jobs=2, timeout=60, mode=mode)
    assert summary.counts["error"] == 0, "programs the runner could not run"
    unknown = summary.unknown_failures()
    assert not unknown, f"{len(unknown)} failures (reproduce: python -m tools.fuzz --backends warm_start " \
                        f"{'--mutate-state ' if mode != 'default' else ''}--seed {CI_SEED} --start <index> " \
                        f"--n 1):\n{_describe(unknown)}"
    # Entries were installed from records, not traced again: most programs have one.
    assert summary.captured >= 0.7 * programs and summary.graphs >= programs, summary.text()


# ---- the shrinker ----------------------------------------------------------------------------


def _function_under_test(source):
    return source.split("def fn(", 1)[1].split("\ndef make_inputs", 1)[0] if "def fn(" in source else ""


def test_the_shrinker_keeps_what_the_failure_needs_and_drops_the_rest():
    # The "failure": the function under test reads STATE.
    source = next(p.source for p in (generate(5, i) for i in range(50)) if "STATE" in _function_under_test(p.source))
    shrunk = shrinker.shrink(source, lambda candidate: "STATE" in _function_under_test(candidate), max_tests=300)
    assert "STATE" in _function_under_test(shrunk)
    assert len(shrunk) < len(source) / 4
    assert "class Net" not in shrunk  # the unused preamble went
    ast.parse(shrunk)


def test_shrinking_removes_input_sets_and_returned_items():
    def still_fails(candidate):
        return "relu" in _function_under_test(candidate) and "VARIANTS = [" in candidate

    shrunk = shrinker.shrink(SIMPLE, still_fails, max_tests=100)
    assert "VARIANTS = []" in shrunk and "a.shape" not in _function_under_test(shrunk)


# ---- regressions found by the fuzzer ----------------------------------------------------------


def _metadata(path):
    tree = ast.parse(path.read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.startswith("FUZZ_"):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


def _regression_params():
    params = []
    for path in REGRESSIONS:
        metadata = _metadata(path)
        bug = metadata.get("FUZZ_KNOWN_BUG")
        if sys.version_info[:2] not in metadata.get("FUZZ_KNOWN_BUG_PYTHONS", (sys.version_info[:2],)):
            bug = None  # a bug of other interpreters: the program must pass here
        marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        params.append(pytest.param(path, marks=marks, id=path.stem))
    return params


@pytest.mark.parametrize("path", _regression_params())
def test_regression(path):
    metadata = _metadata(path)
    source = path.read_text()
    mode = metadata.get("FUZZ_MODE", "default")
    if metadata.get("FUZZ_VERDICT") == "crash":
        with WorkerPool(jobs=1, timeout=60) as pool:
            outcome = pool.run_one(Job(path.stem, source, metadata["FUZZ_BACKENDS"], mode))
    else:
        run = state_runner.run_state_program if mode == state_generator.MODE else runner.run_program
        outcome = run(source, metadata["FUZZ_BACKENDS"], filename=str(path))
    assert outcome.verdict == "ok", outcome.detail
    assert outcome.graphs >= 1, "the program compiled no graph: it tests nothing"


def test_every_known_bug_has_its_regression_program():
    names = {path.name for path in REGRESSIONS}
    for bug in known_bugs.KNOWN_BUGS:
        assert bug.regression in names, bug
        assert _metadata(pathlib.Path(shrinker.REGRESSIONS_DIR, bug.regression)).get("FUZZ_KNOWN_BUG")


def test_regression_programs_are_not_collected_as_tests():
    assert not any(os.path.basename(p).startswith("test_") for p in REGRESSIONS)
