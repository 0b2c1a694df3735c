"""Pipeline parallelism with bytegraph-compiled stages: torch.distributed.pipelining, 2 gloo ranks.

A model split by hand in 2 stages (rank 0 the first half, rank 1 the second), each stage module
bytegraph.compile'd and wrapped in a PipelineStage, trained a few SGD steps with ScheduleGPipe
and Schedule1F1B (4 microbatches, MSE loss): the losses and every rank's parameters must be
those of the same pipeline run uncompiled, and each stage must be one graph, compiled once and
run for every microbatch.

All scenarios run in one launch of 2 processes (tests/_spawn.py, tests/_pipeline_scenarios.py),
each rank writing what it observed; the tests below assert on both ranks' results.
"""

import importlib

import pytest
import torch

from tests import _spawn

WORLD_SIZE = 2
SCHEDULES = ["ScheduleGPipe", "Schedule1F1B"]
BACKENDS = ["eager", "aot_eager"]


def _distributed_unavailable():
    if not torch.distributed.is_available():
        return "torch.distributed is not available in this build of torch"
    if not torch.distributed.is_gloo_available():
        return "torch.distributed has no gloo backend in this build of torch"
    try:
        importlib.import_module("torch.distributed.pipelining")
    except ImportError as error:
        return f"torch.distributed.pipelining cannot be imported: {error}"
    return None


pytestmark = pytest.mark.skipif(_distributed_unavailable() is not None, reason=str(_distributed_unavailable()))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Per scenario, the list of each rank's result."""
    from tests import _pipeline_scenarios

    return _spawn.results_of(tmp_path_factory, "tests._pipeline_scenarios", list(_pipeline_scenarios.SCENARIOS), WORLD_SIZE)


_ranks = _spawn.ranks


def _flat(nested):
    if isinstance(nested, list):
        return [value for item in nested for value in _flat(item)]
    return [nested]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_compiled_stages_train_like_eager_pipelining(results, schedule, backend):
    eager = _ranks(results, f"{schedule}_uncompiled")
    compiled = _ranks(results, f"{schedule}_{backend}")
    # Only the last stage computes the loss: one per microbatch, each step.
    assert [len(step) for step in eager[0]["losses"]] == [0, 0, 0]
    assert [len(step) for step in eager[1]["losses"]] == [4, 4, 4]
    for rank in range(WORLD_SIZE):
        assert _flat(compiled[rank]["losses"]) == pytest.approx(_flat(eager[rank]["losses"]), rel=1e-5, abs=1e-6)
        # Stage 0's parameters move only through the input gradients stage 1 sends back.
        assert _flat(compiled[rank]["params"]) == pytest.approx(_flat(eager[rank]["params"]), rel=1e-5, abs=1e-6)
    # The run trains: the last stage's weights changed and its loss went somewhere.
    assert eager[1]["losses"][0] != eager[1]["losses"][-1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_each_stage_is_one_graph_compiled_once_and_run_for_every_microbatch(results, schedule, backend):
    first, last = _ranks(results, f"{schedule}_{backend}")
    # Stage 0: Linear, ReLU, Linear, ReLU; stage 1: Linear, ReLU, Linear (the module calls).
    assert first["graph_ops"] == [["self_0", "self_1", "self_2", "self_3"]]
    assert last["graph_ops"] == [["self_0", "self_1", "self_2"]]
    for result in (first, last):
        # Every microbatch has the same shape (2 rows): no recompile over the 3 steps.
        assert result["graphs_after_step"] == [1, 1, 1]
        # The compiled graph ran for the stage's shape inference on the first step (a forward
        # on empty tensors of the microbatch's shape) and for each of the 4 microbatches.
        assert result["runs_after_step"] == [5, 9, 13]


def test_uncompiled_schedules_agree(results):
    # GPipe and 1F1B order the same microbatch work differently: same losses, same weights.
    gpipe, one_f_one_b = _ranks(results, "ScheduleGPipe_uncompiled"), _ranks(results, "Schedule1F1B_uncompiled")
    for rank in range(WORLD_SIZE):
        assert _flat(one_f_one_b[rank]["losses"]) == pytest.approx(_flat(gpipe[rank]["losses"]), rel=1e-5, abs=1e-6)
        assert _flat(one_f_one_b[rank]["params"]) == pytest.approx(_flat(gpipe[rank]["params"]), rel=1e-5, abs=1e-6)
