"""The differential fuzzer (tools/fuzz): the CI slice of generated programs, the fuzzer's
own machinery (it must notice a miscompile, a crash, a hang; it must capture something),
and every regression program it found (tests/fuzz_regressions/).

The slice runs CI_PROGRAMS programs of CI_SEED in a worker process, each eagerly and
compiled with the counting backends (aot_eager on a few), across input sets that cross
guards. A failure fails the test unless it is a known bug (tools/fuzz/known_bugs.py, each
with its strict-xfail regression program).
"""

import ast
import os
import pathlib
import sys

import pytest

from tools.fuzz import backends, known_bugs, runner, shrinker
from tools.fuzz.batch import Job, WorkerPool
from tools.fuzz.campaign import run_campaign
from tools.fuzz.generator import generate

CI_PROGRAMS = 200
CI_SEED = 0
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
    if metadata.get("FUZZ_VERDICT") == "crash":
        with WorkerPool(jobs=1, timeout=60) as pool:
            outcome = pool.run_one(Job(path.stem, source, metadata["FUZZ_BACKENDS"]))
    else:
        outcome = runner.run_program(source, metadata["FUZZ_BACKENDS"], filename=str(path))
    assert outcome.verdict == "ok", outcome.detail
    assert outcome.graphs >= 1, "the program compiled no graph: it tests nothing"


def test_every_known_bug_has_its_regression_program():
    names = {path.name for path in REGRESSIONS}
    for bug in known_bugs.KNOWN_BUGS:
        assert bug.regression in names, bug
        assert _metadata(pathlib.Path(shrinker.REGRESSIONS_DIR, bug.regression)).get("FUZZ_KNOWN_BUG")


def test_regression_programs_are_not_collected_as_tests():
    assert not any(os.path.basename(p).startswith("test_") for p in REGRESSIONS)
