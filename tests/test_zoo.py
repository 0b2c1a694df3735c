"""The model zoo (benchmarks/zoo.py) under bytegraph, and the capture gaps it found
(tests/capture_gaps.py).

Every zoo architecture, at its tiny size, in inference and in a training step, plus one
decoder's generate(): compiled with a CompileCounter backend and config.verify_correctness,
called twice with the same shapes, outputs, gradients and buffers compared with eager mode.
The run of the whole zoo takes about 20 s (every (model, mode) is measured once and shared by
the tests below); torch.compile is not run here, only in `make bench` / `python -m
benchmarks.zoo`.

FLOORS holds today's capture of each (model, mode): the graphs of the first call, the ops
captured, and the graphs compiled again plus recompilations logged on the second call;
BROKEN the (model, mode) pairs where bytegraph raises or differs from eager mode today (each a
strict xfail naming the bug, whose reproducer is in WRONG_RESULTS of tests/capture_gaps.py). The
floor test fails when capture gets worse (more graphs or recompiles, fewer ops captured, a
result that differs from eager); the goal test (one graph, no break, nothing left eager, no
recompile) is xfail(strict=True), its reason naming the gaps that block the model most; when
they are closed it passes, and strict xfail makes the suite fail until the entry is updated.
Regenerate the table after a capture change with

    PYTHONPATH=. python -m benchmarks.zoo --in-process --systems bytegraph --floors

and paste the FLOORS and BROKEN tables it prints over these (a reason is printed only for models
still short of one graph).
"""

import re

import pytest
import torch

pytest.importorskip("transformers")

import bytegraph  # noqa: E402
from benchmarks import capture, zoo, zoo_report  # noqa: E402
from bytegraph.testing import CompileCounter, same  # noqa: E402
from capture_gaps import FIXED, GAPS, WRONG_RESULTS  # noqa: E402

# (model, mode): (graphs, ops, second-call graphs + recompiles, tags of the gaps (tests/capture_gaps.py)
# that keep it from one graph, most frequent first, or None when it is captured whole)
# fmt: off
FLOORS = {
    ('gpt2', 'eval'): (28, 96, 6, 'IMPORT_NAME, Size+tuple, BUILD_SET, import-in-try'),
    ('gpt2', 'train'): (28, 96, 6, 'IMPORT_NAME, Size+tuple, BUILD_SET, import-in-try'),
    ('gpt-neo', 'eval'): (28, 110, 16, 'IMPORT_NAME, Size+tuple, BUILD_SET, identity-guard'),
    ('gpt-neo', 'train'): (28, 110, 16, 'IMPORT_NAME, Size+tuple, BUILD_SET, identity-guard'),
    ('gptj', 'eval'): (27, 179, 16, 'IMPORT_NAME, Size+tuple, BUILD_SET, identity-guard'),
    ('gptj', 'train'): (27, 179, 16, 'IMPORT_NAME, Size+tuple, BUILD_SET, identity-guard'),
    ('opt', 'eval'): (2, 69, 0, 'BUILD_SET, IMPORT_NAME, dict-iterator, break-in-FOR_ITER'),
    ('opt', 'train'): (2, 69, 0, 'BUILD_SET, IMPORT_NAME, dict-iterator, break-in-FOR_ITER'),
    ('bloom', 'eval'): (10, 96, 6, 'BUILD_SET, autograd.Function, identity-guard, IMPORT_NAME'),
    ('bloom', 'train'): (10, 96, 6, 'BUILD_SET, autograd.Function, identity-guard, IMPORT_NAME'),
    ('llama', 'eval'): (16, 144, 8, 'IMPORT_NAME, BUILD_SET, environ-get, import-in-try'),
    ('llama', 'train'): (16, 144, 8, 'IMPORT_NAME, BUILD_SET, environ-get, import-in-try'),
    ('mistral', 'eval'): (16, 144, 9, 'IMPORT_NAME, BUILD_SET, environ-get, identity-guard'),
    ('mistral', 'train'): (16, 144, 9, 'IMPORT_NAME, BUILD_SET, environ-get, identity-guard'),
    ('qwen2', 'eval'): (16, 144, 8, 'IMPORT_NAME, BUILD_SET, environ-get, import-in-try'),
    ('qwen2', 'train'): (16, 144, 8, 'IMPORT_NAME, BUILD_SET, environ-get, import-in-try'),
    ('phi', 'eval'): (6, 134, 10, 'IMPORT_NAME, BUILD_SET, identity-guard, import-in-try'),
    ('phi', 'train'): (6, 134, 10, 'IMPORT_NAME, BUILD_SET, identity-guard, import-in-try'),
    ('gemma', 'eval'): (21, 153, 8, 'IMPORT_NAME, BUILD_SET, environ-get, import-in-try'),
    ('gemma', 'train'): (21, 153, 8, 'IMPORT_NAME, BUILD_SET, environ-get, import-in-try'),
    ('falcon', 'eval'): (1, 116, 6, 'BUILD_SET, identity-guard, IMPORT_NAME, dict-subclass-items'),
    ('falcon', 'train'): (1, 116, 6, 'BUILD_SET, identity-guard, IMPORT_NAME, dict-subclass-items'),
    ('bert', 'eval'): (6, 64, 4, 'BUILD_SET, IMPORT_NAME, inspect.signature, dict-iterator'),
    ('bert', 'train'): (6, 64, 4, 'BUILD_SET, IMPORT_NAME, inspect.signature, dict-iterator'),
    ('roberta', 'eval'): (6, 72, 4, 'BUILD_SET, IMPORT_NAME, inspect.signature, dict-iterator'),
    ('roberta', 'train'): (6, 72, 4, 'BUILD_SET, IMPORT_NAME, inspect.signature, dict-iterator'),
    ('electra', 'eval'): (5, 62, 4, 'BUILD_SET, IMPORT_NAME, inspect.signature, dict-iterator'),
    ('electra', 'train'): (5, 62, 4, 'BUILD_SET, IMPORT_NAME, inspect.signature, dict-iterator'),
    ('deberta-v2', 'eval'): (30, 164, 4, 'Size+tuple, BUILD_SET, IMPORT_NAME, import-in-try'),
    ('deberta-v2', 'train'): (30, 164, 4, 'Size+tuple, BUILD_SET, IMPORT_NAME, import-in-try'),
    ('t5', 'eval'): (34, 199, 0, 'BUILD_SET, IMPORT_NAME, str(type), kwargs.pop'),
    ('t5', 'train'): (34, 199, 0, 'BUILD_SET, IMPORT_NAME, str(type), kwargs.pop'),
    ('bart', 'eval'): (7, 168, 0, 'BUILD_SET, IMPORT_NAME, import-in-try, str(type)'),
    ('bart', 'train'): (7, 168, 0, 'BUILD_SET, IMPORT_NAME, import-in-try, str(type)'),
    ('resnet', 'eval'): (3, 34, 6, 'BUILD_SET, IMPORT_NAME, identity-guard, dict-subclass-items'),
    ('resnet', 'train'): (3, 34, 6, 'BUILD_SET, IMPORT_NAME, identity-guard, dict-subclass-items'),
    ('convnext', 'eval'): (3, 30, 6, 'BUILD_SET, IMPORT_NAME, identity-guard, dict-iterator'),
    ('convnext', 'train'): (3, 30, 6, 'BUILD_SET, IMPORT_NAME, identity-guard, dict-iterator'),
    ('swin', 'eval'): (6, 110, 0, 'BUILD_SET, IMPORT_NAME, dict-iterator, break-at-LOAD_METHOD'),
    ('swin', 'train'): (6, 110, 0, 'BUILD_SET, IMPORT_NAME, dict-iterator, break-at-LOAD_METHOD'),
    ('transformer-encoder', 'eval'): (1, 3, 0, None),
    ('transformer-encoder', 'train'): (1, 3, 0, None),
    ('lstm', 'eval'): (1, 7, 0, None),
    ('lstm', 'train'): (1, 7, 0, None),
    ('unet', 'eval'): (4, 33, 2, 'zip/reversed, identity-guard, break-in-FOR_ITER'),
    ('unet', 'train'): (4, 33, 2, 'zip/reversed, identity-guard, break-in-FOR_ITER'),
    ('llama-generate', 'generate'): (57, 456, 17, 'BUILD_SET, environ-get, IMPORT_NAME, all/callable'),
}

BROKEN = {
    ('distilbert', 'eval'): 'error: RecursionError: maximum recursion depth exceeded while calling a Python object',
    ('distilbert', 'train'): 'error: RecursionError: maximum recursion depth exceeded while calling a Python object',
    ('albert', 'eval'): 'error: RecursionError: maximum recursion depth exceeded while calling a Python object',
    ('albert', 'train'): 'error: RecursionError: maximum recursion depth exceeded while calling a Python object',
    ('vit', 'eval'): 'error: RecursionError: maximum recursion depth exceeded while calling a Python object',
    ('vit', 'train'): 'error: RecursionError: maximum recursion depth exceeded while calling a Python object',
    ('deit', 'eval'): 'error: RecursionError: maximum recursion depth exceeded while calling a Python object',
    ('deit', 'train'): 'error: RecursionError: maximum recursion depth exceeded while calling a Python object',
}
# fmt: on

_ROWS = {}


def _measured(name, mode):
    """The zoo's bytegraph row for (name, mode), measured once per test session."""
    key = (name, mode)
    if key not in _ROWS:
        torch.set_num_threads(1)
        _ROWS[key] = zoo.measure(name, mode, systems=("bytegraph",), verify=True)
    return _ROWS[key]


_GAP_NAMES = {gap.tag: gap.name for gap in GAPS}


def _zoo_params(goal=False):
    params = []
    for (name, mode), (_, _, _, blocked_by) in FLOORS.items():
        marks = ()
        if goal and blocked_by:
            gaps = "; ".join(_GAP_NAMES.get(tag.strip(), tag.strip()) for tag in blocked_by.split(","))
            marks = pytest.mark.xfail(strict=True, reason=f"not captured whole; blocked most by: {gaps}")
        params.append(pytest.param(name, mode, marks=marks, id=f"{name}-{mode}"))
    return params


def test_floors_cover_the_whole_zoo():
    assert not set(FLOORS) & set(BROKEN)
    assert set(FLOORS) | set(BROKEN) == set(zoo.jobs()), "every zoo (model, mode) needs a floor (module docstring)"
    assert len({name for name, _ in zoo.jobs()}) >= 25


@pytest.mark.parametrize("name,mode", [pytest.param(name, mode, id=f"{name}-{mode}", marks=pytest.mark.xfail(
    strict=True, reason=f"bytegraph bug: {problem} (WRONG_RESULTS in tests/capture_gaps.py)"))
    for (name, mode), problem in BROKEN.items()])
def test_zoo_broken_models_equal_eager(name, mode):
    row = _measured(name, mode)
    assert "error" not in row["eager"], f"eager mode fails: {row['eager']['error']}"
    assert row["bytegraph"]["verdict"] == "ok", (row["bytegraph"].get("error") or {}).get("error")


@pytest.mark.parametrize("name,mode", _zoo_params())
def test_zoo_capture_floor(name, mode):
    row = _measured(name, mode)
    assert "error" not in row["eager"], f"eager mode fails: {row['eager']['error']}"
    ours = row["bytegraph"]
    assert ours["verdict"] == "ok", (ours.get("error") or {}).get("traceback") or ours["differences"]
    graphs, ops, second, _ = FLOORS[(name, mode)]
    again = (ours["second_call_graphs"] or 0) + (ours["recompiles"] or 0)
    assert ours["graphs"] <= graphs, f"capture got worse: {ours['graphs']} graphs, {graphs} before"
    assert ours["ops"] >= ops, f"fewer ops captured: {ours['ops']}, {ops} before"
    assert again <= second, f"the second call compiled {again} times, {second} before"


@pytest.mark.parametrize("name,mode", _zoo_params(goal=True))
def test_zoo_captured_whole(name, mode):
    row = _measured(name, mode)
    ours = row["bytegraph"]
    breaks = [f"{e['kind']}: {e['message']}" for e in ours["break_events"][:3]]
    assert ours["verdict"] == "ok"
    most = zoo_report.GENERATE_MAX_GRAPHS if mode == "generate" else 1
    assert 1 <= ours["graphs"] <= most, f"{ours['graphs']} graphs; first breaks: {breaks}"
    assert ours["breaks"] == 0 and ours["eager_frames"] == 0, breaks
    assert ours["second_call_graphs"] == 0 and ours["recompiles"] == 0, ours["second_call_recompile_reasons"]


def test_generate_tokens_equal_eager():
    row = _measured("llama-generate", "generate")
    assert len(row["eager"]["tokens"]) == zoo.GENERATE_TOKENS
    assert row["bytegraph"]["verdict"] == "ok", row["bytegraph"]["differences"]
    assert row["bytegraph"]["graphs"] >= 1


# ---- the capture gaps ---------------------------------------------------------------------------


def _gap_id(gap, i):
    return f"{gap.function.__name__}-{i}"


_ALL_GAPS = [pytest.param(gap, id=_gap_id(gap, i)) for i, gap in enumerate(GAPS + FIXED + WRONG_RESULTS)]


@pytest.mark.parametrize("gap", _ALL_GAPS)
def test_capture_gap_eager_behaviour(gap):
    assert same(gap.expected(), gap.run())


def _compiled_twice(gap):
    """The gap's program compiled (CompileCounter, verify_correctness) and called twice on
    fresh arguments: (results, texts of the logged breaks, eager frames and second-call
    recompiles)."""
    bytegraph.reset()
    counter = CompileCounter()
    compiled = bytegraph.compile(gap.function, backend=counter)
    with capture.bytegraph_events() as events, bytegraph.config.patch(verify_correctness=True):
        first = gap.run(compiled)
        before = len(events.recompiles)
        second = gap.run(compiled)
    bytegraph.reset()
    texts = [f"{e['kind']}: {e['message']}" for e in events.break_events + events.eager_events]
    texts += [f"recompile: {reason}" for entry in events.recompiles[before:] for reason in entry["reasons"][:1]]
    return (first, second), texts


_MATCHING = [pytest.param(gap, id=_gap_id(gap, i)) for i, gap in enumerate(GAPS + FIXED)] + [
    pytest.param(gap, id=_gap_id(gap, len(GAPS) + len(FIXED) + i),
                 marks=pytest.mark.xfail(strict=True, reason=f"bytegraph bug: {gap.name}"))
    for i, gap in enumerate(WRONG_RESULTS)]


@pytest.mark.parametrize("gap", _MATCHING)
def test_capture_gap_compiled_matches_eager(gap):
    (first, second), _ = _compiled_twice(gap)
    expected = gap.expected()
    assert same(expected, first) and same(expected, second)


_CLOSED = [pytest.param(gap, id=_gap_id(gap, i), marks=pytest.mark.xfail(strict=True, reason=gap.capability))
           for i, gap in enumerate(GAPS)] + [pytest.param(gap, id=_gap_id(gap, len(GAPS) + i))
                                             for i, gap in enumerate(FIXED)]


@pytest.mark.parametrize("gap", _CLOSED)
def test_capture_gap_closed(gap):
    _, texts = _compiled_twice(gap)
    hit = [text for text in texts if re.search(gap.matches, text)]
    assert not hit, hit[:2]
