"""Smoke tests of the benchmarks (benchmarks/): every measurement runs at a tiny size.

These check that the benchmarks run and report sensible quantities, not how fast anything
is: benchmarks are not tests, and no timing is asserted beyond being a positive duration.
The transformers models and inductor are covered only when asked for
(BYTEGRAPH_BENCH_SMOKE_FULL=1), since they need optional packages and minutes of compiling.
"""

import contextlib
import json
import math
import os
import subprocess
import sys

import pytest
import torch

from benchmarks import cache_hit, capture, fake_floor, inductor_zoo, models, report, run, tracing
from bytegraph._C import trace as _trace

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FULL = os.environ.get("BYTEGRAPH_BENCH_SMOKE_FULL") == "1"


def _model(name):
    (model,) = models.select(names=[name])
    return model.make()


def _positive(seconds):
    return isinstance(seconds, float) and math.isfinite(seconds) and seconds > 0


def test_seed_models_capture_like_dynamo():
    fn, args, kwargs = _model("Net")
    ours, theirs = capture.bytegraph_capture(fn, args, kwargs), capture.torch_capture(fn, args, kwargs)
    assert (ours["graphs"], ours["ops"], ours["eager_frames"]) == (1, 2, 0)
    assert (theirs["graphs"], theirs["breaks"]) == (1, 0)


def test_seed_function_splits_at_its_break_like_dynamo():
    fn, args, kwargs = _model("foo2")
    ours = capture.bytegraph_capture(fn, args, kwargs)
    # The notebook's foo2: two tensor branches, so three graphs and two breaks in both systems.
    assert (ours["graphs"], ours["breaks"], ours["eager_frames"]) == (3, 2, 0)
    assert "data_dependent_branch" in ours["break_reasons"][0]
    theirs = capture.torch_capture(fn, args, kwargs)
    assert (theirs["graphs"], theirs["breaks"]) == (3, 2)


def _break_in_a_loop(x):
    for i in range(3):
        x = x * 2
        print("iteration", i)  # the resume function's loop holds a break: not split again
        x = x + 1
    return x


def test_a_frame_that_cannot_be_split_is_recorded_as_eager():
    ours = capture.bytegraph_capture(_break_in_a_loop, (torch.randn(3),), {})
    assert ours["eager_frames"] == 1
    assert "runs eagerly" in ours["eager_reasons"][0]


def test_cold_calls_and_eager_time_are_positive():
    fn, args, kwargs = _model("MLP")
    assert _positive(tracing.eager_seconds(fn, args, kwargs, calls=2))
    assert _positive(tracing.bytegraph_cold_call_seconds(fn, args, kwargs, repeats=1))
    assert _positive(tracing.torch_cold_call_seconds(fn, args, kwargs, repeats=1))


def test_fake_replay_computes_the_real_shapes_on_fakes():
    fn, args, kwargs = _model("CNN")
    result = _trace.trace(fn, args, kwargs)
    gm = result.graph_module
    replay = fake_floor.FakeReplay(gm, list(result.example_inputs))
    env = replay.run()
    output_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    (last,) = output_node.all_input_nodes
    with torch.no_grad():
        expected = fn(*args, **kwargs)
    fake = env[last]
    assert type(fake).__name__ == "FakeTensor"
    assert fake.shape == expected.shape and fake.dtype == expected.dtype
    assert fake_floor.op_count(gm) == len(env) - len(list(gm.graph.find_nodes(op="placeholder")))
    fresh, warm = fake_floor.fake_floor_seconds(gm, list(result.example_inputs), repeats=1)
    assert _positive(fresh) and _positive(warm)


def test_cache_hit_rows_cover_each_arity():
    rows = cache_hit.measure(calls=20, batches=1)
    assert [row["tensors"] for row in rows] == [1, 2, 8]
    for row in rows:
        for key in ("eager_s", "empty_call_s", "bytegraph_s", "torch_s"):
            assert _positive(row[key])
        assert math.isclose(row["bytegraph_overhead_s"], row["bytegraph_s"] - row["eager_s"])


def test_a_crashing_job_is_recorded_not_raised(tmp_path, monkeypatch):
    # A worker that dies of a signal, as bytegraph's core can on an unsupported model.
    monkeypatch.setattr(sys, "executable", str(_crashing_python(tmp_path)))
    row = run.run_worker(["model", "Net"], timeout=60, log=lambda *_: None)
    assert row["crash"]["how"] == "crashed (SIGSEGV)"
    text = report.markdown(_results_with(models=[{**row, "model": {"name": "Net"}}]))
    assert "crashed (SIGSEGV)" in text


def _crashing_python(tmp_path):
    script = tmp_path / "python"
    # LD_PRELOAD is dropped so that a sanitizer runtime (make asan) does not turn the signal
    # into an ordinary exit.
    script.write_text(
        f"#!/bin/sh\nexec env -u LD_PRELOAD {sys.executable} -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'\n"
    )
    script.chmod(0o755)
    return script


def _results_with(**parts):
    results = {
        "machine": {"cpu": "cpu", "cores": 2, "torch_threads": 1, "python": "3", "torch": "t", "platform": "p",
                    "load_average": (0.0, 0.0, 0.0)},
        "settings": {"repeats": 1, "cache_calls": 1, "cache_batches": 1, "smoke": True},
        "started": "now", "models": [], "inductor": [], "profiles": [],
    }
    results.update(parts)
    return results


def test_run_writes_table_and_chart(tmp_path):
    """The whole pipeline, each job in its own process, on the seed model."""
    command = [sys.executable, "-m", "benchmarks.run", "--smoke", "--no-transformers", "--models", "Net",
               "--out", str(tmp_path)]
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "latest.json").read_text())
    assert [row["model"]["name"] for row in results["models"]] == ["Net"]
    assert not any(row.get("crash") for row in results["models"])
    text = (tmp_path / "latest.md").read_text()
    for heading in ("Tracing time", "Cache-hit overhead", "fake-tensor floor", "Inductor", "Capture"):
        assert heading in text
    assert "| Net | 1 | 2 | 0 | 0 | 1 | 2 | 0 |" in text
    again = tmp_path / "again"
    assert run.main(["--from-json", str(tmp_path / "latest.json"), "--out", str(again)]) == 0
    assert (again / "latest.md").read_text() == text
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (tmp_path / "latest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not FULL, reason="transformers models and inductor need BYTEGRAPH_BENCH_SMOKE_FULL=1 (minutes)")
@pytest.mark.skipif(not models.have_transformers(), reason="transformers is not installed")
def test_transformers_and_inductor_jobs_finish_or_record_failures():
    row = run.run_worker(["model", "ResNet", "--repeats", "1"], timeout=300, log=lambda *_: None)
    assert row.get("done") or row.get("crash")
    assert row["torch_capture"]["graphs"] >= 1
    row = run.run_worker(["inductor", "Net", "bytegraph"], timeout=300, log=lambda *_: None)
    assert row["inductor"]["matches_eager"]
    assert set(row["inductor"]["steady"]) == {"eager_s", "torch_s", "bytegraph_s"}


def test_inductor_zoo_rows_render_with_their_goals_and_crashes():
    """The inductor-on-the-zoo section from saved rows (the measurement itself compiles with
    inductor for minutes: BYTEGRAPH_BENCH_SMOKE_FULL=1 runs one job below)."""
    def system(seconds):
        return {"compile_s": seconds, "graphs": 1, "max_difference": 1e-6, "matches_eager": True}

    rows = [
        {"model": "gpt2", "mode": "eval", "first": "torch", "torch": system(6.0), "bytegraph": system(5.0),
         "steady": {"eager_s": 2e-3, "torch_s": 1e-3, "bytegraph_s": 0.9e-3}},
        {"model": "gpt2", "mode": "train", "first": "bytegraph", "torch": system(9.0),
         "crash": {"how": "timed out after 900 s", "stage": "bytegraph"}},
    ]
    results = {"inductor_zoo": {"started": "s", "finished": "f", "rows": rows}}
    summary = inductor_zoo.summary_lines(results)
    assert len(summary) == 1 and "gpt2 0.90x" in summary[0] and "1 of 1 at most 1.05x: met" in summary[0]
    section = "\n".join(inductor_zoo.report_section(results))
    assert "| gpt2 | eval | 2.00 | 1.00 | 0.90 | 0.90x | 6.0 | 1 | yes | 5.0 | 1 | yes |" in section
    assert "timed out after 900 s in bytegraph" in section
    assert inductor_zoo.summary_lines({}) == [] and inductor_zoo.report_section({}) == []


@pytest.mark.skipif(not FULL, reason="inductor compiles for minutes: BYTEGRAPH_BENCH_SMOKE_FULL=1")
@pytest.mark.skipif(not models.have_transformers(), reason="transformers is not installed")
def test_inductor_zoo_job_measures_both_systems():
    measured = inductor_zoo.run_all(["bert"], ["eval"], timeout=600, log=lambda *_, **__: None)
    (row,) = measured["rows"]
    assert row["torch"]["matches_eager"] and row["bytegraph"]["matches_eager"]
    assert row["bytegraph"]["graphs"] == row["torch"]["graphs"] == 1
    assert set(row["steady"]) == {"eager_s", "torch_s", "bytegraph_s"}


def test_cache_hits_by_interpreter_render_with_their_goal():
    def hit(tensors, ours):
        return {"tensors": tensors, "eager_s": 1e-6, "empty_call_s": 4e-8, "bytegraph_s": 2e-6, "torch_s": 1e-5,
                "bytegraph_overhead_s": ours, "torch_overhead_s": 9e-6}

    rows = [{"python": "3.12", "cache_hit": [hit(1, 1.1e-6), hit(2, 1.2e-6), hit(8, 3e-6)]},
            {"python": "3.13", "crash": {"how": "crashed (SIGSEGV)"}}]
    text = report.markdown(_results_with(cache={"cache_hit": [hit(2, 0.9e-6)]},
                                         cache_by_python={"started": "s", "finished": "f", "rows": rows}))
    assert "| 3.12 | 1.10 / 9.00 | 1.20 / 9.00 | 3.00 / 9.00 | **missed** |" in text
    assert "| 3.13 | failed: crashed (SIGSEGV) |" in text
    assert "By interpreter: 3.12 1.20 us (**missed**)." in text
    assert [version for version, _ in run.other_interpreters()] == [
        v for v in ("3.12", "3.13") if os.path.exists(os.path.join(REPO, f".venv-{v}", "bin", "python"))
        and any(name.startswith(f"_C.cpython-{v.replace('.', '')}-") for name in os.listdir(os.path.join(REPO, "bytegraph")))]
