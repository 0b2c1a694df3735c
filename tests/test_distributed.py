"""Distributed training under bytegraph: DDP and FSDP2 on torch's own engine, 2 gloo ranks.

All scenarios run in one launch of 2 processes (tests/_distributed_scenarios.py; starting
processes that import torch is most of the cost), each rank writing what it observed; the
tests below assert on both ranks' results: losses and parameters equal to eager training's,
and what was captured (graphs, DDP pieces, when gradient all-reduces start).
"""

import json
import os
import socket
import time

import pytest
import torch

import bytegraph
from bytegraph import _distributed, backends

WORLD_SIZE = 2
LAUNCH_TIMEOUT_S = 240


def _distributed_unavailable():
    if not torch.distributed.is_available():
        return "torch.distributed is not available in this build of torch"
    if not torch.distributed.is_gloo_available():
        return "torch.distributed has no gloo backend in this build of torch"
    return None


needs_gloo = pytest.mark.skipif(_distributed_unavailable() is not None, reason=str(_distributed_unavailable()))


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _launch(out_dir, names):
    import torch.multiprocessing as mp

    from tests import _distributed_scenarios

    context = mp.start_processes(_distributed_scenarios.run_rank, args=(WORLD_SIZE, _free_port(), str(out_dir), names),
                                 nprocs=WORLD_SIZE, join=False, start_method="spawn")
    deadline = time.monotonic() + LAUNCH_TIMEOUT_S
    try:
        # join() returns when one more rank has ended (True once all have): wait for each.
        while not context.join(timeout=max(deadline - time.monotonic(), 0)):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the {WORLD_SIZE} ranks did not finish within {LAUNCH_TIMEOUT_S} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.terminate()


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Per scenario, the list of each rank's result."""
    from tests import _distributed_scenarios

    out_dir = tmp_path_factory.mktemp("distributed")
    names = list(_distributed_scenarios.SCENARIOS)
    _launch(out_dir, names)
    per_rank = [json.loads((out_dir / f"rank{rank}.json").read_text()) for rank in range(WORLD_SIZE)]
    return {name: [ranks[name] for ranks in per_rank] for name in names}


def _ranks(results, name):
    ranks = results[name]
    for rank, result in enumerate(ranks):
        assert "error" not in result, f"rank {rank}:\n{result['error']}"
    return ranks


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


@needs_gloo
def test_a_dtensor_is_refused_with_a_reason_and_runs_eagerly():
    # Tensor parallelism is not traced yet: a frame that reads a DTensor must run it eagerly
    # (never compute with it as if it were a plain tensor).
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, distribute_tensor

    started_here = not dist.is_initialized()
    if started_here:
        dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        mesh = init_device_mesh("cpu", (1,))
        weight = distribute_tensor(torch.randn(4, 4), mesh, [Replicate()])

        def f(x):
            return x + (weight * 2).to_local()[:2]

        x = torch.randn(2, 4)
        explained = bytegraph.explain(f)(x)
        assert [reason.kind for reason in explained.break_reasons][:1] == ["distributed_tensor"]
        torch.testing.assert_close(bytegraph.compile(f, backend="aot_eager")(x), f(x))
        bytegraph.reset()
        with pytest.raises(bytegraph.exc.GraphBreakError, match="DTensor"):
            bytegraph.compile(f, backend="eager", fullgraph=True)(x)
    finally:
        bytegraph.reset()
        if started_here:
            dist.destroy_process_group()
