"""Distributed training under bytegraph: DDP and FSDP2 on torch's own engine, 2 gloo ranks.

The 2-rank scenarios run in one launch of 2 processes, the 2x2-mesh ones in one launch of 4
(tests/_spawn.py, tests/_distributed_scenarios.py), each rank writing what it observed; the
tests below assert on every rank's results: losses and parameters equal to eager training's,
and what was captured (graphs, DDP pieces, when gradient all-reduces start).
"""

import pytest
import torch

import bytegraph
from bytegraph import _distributed, backends
from tests import _spawn

WORLD_SIZE = 2


def _distributed_unavailable():
    if not torch.distributed.is_available():
        return "torch.distributed is not available in this build of torch"
    if not torch.distributed.is_gloo_available():
        return "torch.distributed has no gloo backend in this build of torch"
    return None


needs_gloo = pytest.mark.skipif(_distributed_unavailable() is not None, reason=str(_distributed_unavailable()))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Per scenario of the 2-rank launch, the list of each rank's result."""
    from tests import _distributed_scenarios

    names = [name for name in _distributed_scenarios.SCENARIOS if name not in _distributed_scenarios.ON_4_RANKS]
    return _spawn.results_of(tmp_path_factory, "tests._distributed_scenarios", names, WORLD_SIZE)


@pytest.fixture(scope="module")
def results_4_ranks(tmp_path_factory):
    """The same, for the scenarios of a 2x2 mesh."""
    from tests import _distributed_scenarios

    return _spawn.results_of(tmp_path_factory, "tests._distributed_scenarios", _distributed_scenarios.ON_4_RANKS, 4)


_ranks = _spawn.ranks


def _trains_like_eager(result):
    assert result["losses"] == pytest.approx(result["eager_losses"], rel=1e-5, abs=1e-6)
    assert result["param_difference"] < 1e-5


# --- DDP ------------------------------------------------------------------------------------


@needs_gloo
def test_ddp_of_a_compiled_module_splits_at_buckets_and_trains_like_eager(results):
    for result in _ranks(results, "ddp_of_compiled"):
        _trains_like_eager(result)
        # One piece per Linear (1 MiB of weights each, 1 MiB buckets): 3 pieces of the one
        # graph, each compiled once (no recompile over the steps), all 6 ops captured.
        assert (result["pieces_compiled"], result["op_count"]) == (3, 6)
        assert result["explain"] == {"graph_count": 1, "ddp_splits": [3], "summary_mentions_splits": True}
        (message,) = result["ddp_log"]
        assert message.startswith("DDP SPLIT __compiled_fn_") and "split into 3 pieces" in message
        assert "self_layers_0_weight" in message


@needs_gloo
def test_compiled_ddp_with_aot_backend_overlaps_allreduce_with_backward(results):
    for result in _ranks(results, "compiled_ddp_aot_eager"):
        _trains_like_eager(result)
        assert result["pieces_compiled"] == 3
        events = result["backward_events"]
        # An all-reduce is launched before the backward of the first pieces has run (they
        # still unpack their saved activations after it).
        assert events.count("allreduce") >= 2
        assert events.index("allreduce") < len(events) - 1 - events[::-1].index("unpack"), events


@needs_gloo
def test_ddp_with_optimize_ddp_off_compiles_one_graph(results):
    for result in _ranks(results, "ddp_unsplit"):
        _trains_like_eager(result)
        assert result["pieces_compiled"] == 1
        assert result["explain"] == {"graph_count": 1, "ddp_splits": [1], "summary_mentions_splits": False}
        events = result["backward_events"]
        # One fused backward: every activation is unpacked before the first all-reduce.
        assert "unpack" in events and "allreduce" in events
        assert events.index("allreduce") > len(events) - 1 - events[::-1].index("unpack"), events


@needs_gloo
def test_ddp_with_a_changing_batch_size_splits_the_dynamic_graph(results):
    for result in _ranks(results, "ddp_dynamic_batch"):
        _trains_like_eager(result)
        # Batch sizes 8, 8, 6, 5, 7: 3 static pieces; at 6 the graph is recompiled with a
        # symbolic batch size and split again in 3; 5 and 7 reuse it.
        assert result["pieces_after_each_step"] == [3, 3, 6, 6, 6]


# --- FSDP2 ----------------------------------------------------------------------------------


@needs_gloo
def test_fsdp2_compiled_whole_model_trains_like_eager(results):
    for result in _ranks(results, "fsdp_compiled_whole"):
        _trains_like_eager(result)
        # The FSDP hooks around each block split the model (torch.compile breaks there too):
        # one graph per block (3 ops each) and one for the head, none recompiled.
        assert (result["graphs"], result["op_count"]) == (4, 10)


@needs_gloo
def test_fsdp2_of_compiled_blocks_trains_like_eager(results):
    for result in _ranks(results, "fsdp_per_block"):
        _trains_like_eager(result)
        assert (result["graphs"], result["op_count"]) == (3, 9)
        assert result["blocks_are_sharded_wrappers"] and result["originals_unchanged"]
        # The root found each block's FSDP state through the wrappers.
        assert result["blocks_not_root"] == [False, False, False]


# --- tensor parallelism (DTensor parameters, parallelize_module) ------------------------------


def _plain_output_with_gradients(result):
    # A plain tensor (the plan's use_local_output), attached to the graph: the block's
    # parameters get gradients (the losses and parameters above would differ otherwise).
    assert result["output_type"] == "Tensor" and result["output_requires_grad"]
    assert result["parameters_are_dtensors"]


# Graphs each scenario compiles: one per block, the plans' hooks included (the input's
# from_local, the linears on sharded weights, the redistributes and to_local, the residual
# add); with batch sizes 4, 4, 6, 5, 7, a static graph, then one with a symbolic batch (the
# local shards' sizes included) that 5 and 7 reuse.
_TP_GRAPHS = {"tp_feed_forward_aot_eager": 1, "tp_feed_forward_eager": 1, "tp_attention_aot_eager": 1,
              "tp_feed_forward_dynamic_batch": 2}


@needs_gloo
@pytest.mark.parametrize("scenario", list(_TP_GRAPHS))
def test_tensor_parallel_blocks_train_like_eager_tensor_parallelism(results, scenario):
    for result in _ranks(results, scenario):
        _trains_like_eager(result)
        _plain_output_with_gradients(result)
        assert result["graphs"] == _TP_GRAPHS[scenario]


@needs_gloo
def test_a_redistribute_in_the_graph_gathers_and_placements_are_guarded(results):
    for result in _ranks(results, "dtensor_redistribute"):
        assert "error" not in result, result.get("error")
        assert result["matches_eager"] and result["is_the_whole_tensor"]
        # The repeated call reuses the graph; the replicated input recompiles (its placements
        # are part of what the graph was traced for).
        assert (result["graphs_after_repeat"], result["graphs"]) == (1, 2)


@needs_gloo
def test_fsdp2_over_tensor_parallel_blocks_on_a_2x2_mesh_trains_like_eager(results_4_ranks):
    # torchtitan's recipe: tensor parallelism inside each block, each block compiled, FSDP2
    # over the other mesh dimension. One graph per block (FSDP's hooks run between them).
    for result in _ranks(results_4_ranks, "fsdp_tp_2d"):
        _trains_like_eager(result)
        assert result["graphs"] == 2


# --- without a process group ----------------------------------------------------------------


def test_optimize_ddp_is_on_by_default():
    assert bytegraph.config.defaults()["optimize_ddp"] is True


def test_without_an_active_ddp_module_the_backend_is_unchanged():
    counter = bytegraph.testing.CompileCounter()
    assert _distributed.active_ddp_module() is None
    assert _distributed.backend_for_graph(counter, "g") is counter
    assert _distributed.piece_count(counter) == 1


def test_ddp_log_artifact_is_registered():
    assert "ddp" in bytegraph._logging.valid_names()
    with pytest.raises(ValueError):
        bytegraph.set_logs(ddp_split=True)


def test_torch_compilers_are_told_apart_from_other_backends():
    assert backends.is_torch_compiler(backends.lookup_backend("inductor"))
    assert backends.is_torch_compiler(backends.lookup_backend("aot_eager"))
    assert backends.is_torch_compiler(bytegraph.testing.CompileCounterWithBackend("aot_eager"))
    assert not backends.is_torch_compiler(backends.lookup_backend("eager"))
    assert not backends.is_torch_compiler(bytegraph.testing.CompileCounter())
