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
    ('gpt2', 'eval'): (1, 124, 0, None),
    ('gpt2', 'train'): (1, 124, 0, None),
    ('gpt-neo', 'eval'): (1, 122, 0, None),
    ('gpt-neo', 'train'): (1, 122, 0, None),
    ('gptj', 'eval'): (1, 190, 0, None),
    ('gptj', 'train'): (1, 190, 0, None),
    ('opt', 'eval'): (1, 69, 0, None),
    ('opt', 'train'): (1, 69, 0, None),
    ('bloom', 'eval'): (1, 91, 0, None),
    ('bloom', 'train'): (1, 91, 0, None),
    ('llama', 'eval'): (1, 174, 0, None),
    ('llama', 'train'): (1, 176, 0, None),
    ('mistral', 'eval'): (1, 181, 0, None),
    ('mistral', 'train'): (1, 183, 0, None),
    ('qwen2', 'eval'): (1, 174, 0, None),
    ('qwen2', 'train'): (1, 176, 0, None),
    ('phi', 'eval'): (1, 152, 0, None),
    ('phi', 'train'): (1, 154, 0, None),
    ('gemma', 'eval'): (1, 186, 0, None),
    ('gemma', 'train'): (1, 188, 0, None),
    ('falcon', 'eval'): (1, 114, 0, None),
    ('falcon', 'train'): (1, 116, 0, None),
    ('bert', 'eval'): (1, 64, 0, None),
    ('bert', 'train'): (1, 64, 0, None),
    ('roberta', 'eval'): (1, 72, 0, None),
    ('roberta', 'train'): (1, 72, 0, None),
    ('distilbert', 'eval'): (1, 54, 0, None),
    ('distilbert', 'train'): (1, 54, 0, None),
    ('albert', 'eval'): (1, 77, 0, None),
    ('albert', 'train'): (1, 77, 0, None),
    ('electra', 'eval'): (1, 62, 0, None),
    ('electra', 'train'): (1, 62, 0, None),
    ('deberta-v2', 'eval'): (1, 224, 0, None),
    ('deberta-v2', 'train'): (1, 224, 0, None),
    ('t5', 'eval'): (1, 293, 0, None),
    ('t5', 'train'): (1, 293, 0, None),
    ('bart', 'eval'): (1, 164, 0, None),
    ('bart', 'train'): (1, 164, 0, None),
    ('vit', 'eval'): (1, 61, 0, None),
    ('vit', 'train'): (1, 61, 0, None),
    ('deit', 'eval'): (1, 62, 0, None),
    ('deit', 'train'): (1, 62, 0, None),
    ('resnet', 'eval'): (1, 34, 0, None),
    ('resnet', 'train'): (1, 34, 0, None),
    ('convnext', 'eval'): (1, 30, 0, None),
    ('convnext', 'train'): (1, 30, 0, None),
    ('swin', 'eval'): (1, 112, 0, None),
    ('swin', 'train'): (1, 112, 0, None),
    ('transformer-encoder', 'eval'): (1, 3, 0, None),
    ('transformer-encoder', 'train'): (1, 3, 0, None),
    ('lstm', 'eval'): (1, 7, 0, None),
    ('lstm', 'train'): (1, 7, 0, None),
    ('unet', 'eval'): (1, 37, 0, None),
    ('unet', 'train'): (1, 37, 0, None),
    ('llama-generate', 'generate'): (3, 412, 0, None),
}

BROKEN = {
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


def _pinned_transformers():
    """The transformers release constraints.txt pins (the floors' op counts are that release's)."""
    import pathlib

    text = (pathlib.Path(__file__).resolve().parent.parent / "constraints.txt").read_text()
    found = re.search(r"^transformers==(\S+)", text, re.MULTILINE)
    return found.group(1) if found else None


@pytest.mark.parametrize("name,mode", _zoo_params())
def test_zoo_capture_floor(name, mode):
    import transformers

    if transformers.__version__ != _pinned_transformers():
        # Another release's models are other code: its op counts differ. Being whole
        # (test_zoo_captured_whole) is what holds for every release (`make zoo-newest`).
        pytest.skip(f"op-count floors are transformers {_pinned_transformers()}'s; this is {transformers.__version__}")
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
