"""DTensor traced as torch.compile traces it, on a one-rank mesh in this process: ops on a
DTensor, from_local / to_local / redistribute in the graph, placements and the mesh guarded.

A DTensor is a traceable wrapper subclass: its fake is a DTensor of fakes (torch's meta
converter), its ops run DTensor's sharding propagation on the fakes, and the graph holds them
as DTensor ops. The multi-rank behaviour (collectives, tensor-parallel training) is in
tests/test_distributed.py.
"""

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounterWithBackend
from tests._trace_helpers import trace

dist = pytest.importorskip("torch.distributed")
pytestmark = pytest.mark.skipif(not (dist.is_available() and dist.is_gloo_available()),
                                reason="torch.distributed with gloo is not available in this build of torch")


@pytest.fixture(scope="module")
def mesh():
    from torch.distributed.device_mesh import init_device_mesh

    started_here = not dist.is_initialized()
    if started_here:
        dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        bytegraph.reset()
        if started_here:
            dist.destroy_process_group()


def _sharded(mesh, *shape):
    from torch.distributed.tensor import Shard, distribute_tensor

    return distribute_tensor(torch.randn(*shape), mesh, [Shard(0)])


def _compiled(fn, backend="aot_eager"):
    bytegraph.reset()
    counter = CompileCounterWithBackend(backend)
    return bytegraph.compile(fn, backend=counter), counter


def _same(expected, actual):
    from torch.distributed.tensor import DTensor

    assert type(actual) is type(expected)
    if isinstance(expected, DTensor):
        assert actual.placements == expected.placements
        expected, actual = expected.full_tensor(), actual.full_tensor()
    torch.testing.assert_close(actual, expected)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_ops_on_a_dtensor_are_one_graph_that_keeps_the_placements(mesh, backend):
    def f(x):
        return (x * 2).sin() + x.sum()

    compiled, counter = _compiled(f, backend)
    x = _sharded(mesh, 4, 4)
    for _ in range(2):
        _same(f(x), compiled(x))
    assert (counter.frame_count, counter.op_count) == (1, 4)


def test_from_local_and_to_local_are_in_the_graph(mesh):
    from torch.distributed.tensor import DTensor, Shard

    def f(t):
        d = DTensor.from_local(t, mesh, [Shard(0)])
        return (d + 1).to_local() * 3

    compiled, counter = _compiled(f)
    t = torch.randn(4, 4, requires_grad=True)
    _same(f(t), compiled(t))
    assert counter.frame_count == 1
    compiled(t).sum().backward()
    torch.testing.assert_close(t.grad, torch.full((4, 4), 3.0))


def test_redistribute_is_in_the_graph(mesh):
    from torch.distributed.tensor import Replicate

    def f(x):
        return (x * 2).redistribute(mesh, [Replicate()]) + 1

    compiled, counter = _compiled(f)
    x = _sharded(mesh, 4, 4)
    _same(f(x), compiled(x))
    assert counter.frame_count == 1


def test_placements_are_guarded(mesh):
    from torch.distributed.tensor import Replicate, distribute_tensor

    compiled, counter = _compiled(lambda x: x.redistribute(mesh, [Replicate()]) * 2)
    sharded = _sharded(mesh, 4, 4)
    replicated = distribute_tensor(sharded.full_tensor(), mesh, [Replicate()])
    for x in (sharded, sharded, replicated, replicated):
        _same(x.redistribute(mesh, [Replicate()]) * 2, compiled(x))
    # The replicated input is another spec: a graph of its own, reused after.
    assert counter.frame_count == 2


def test_a_placement_made_for_each_call_is_compared_by_value(mesh):
    from torch.distributed.tensor import Replicate

    def f(x, placements):
        return x.redistribute(mesh, placements) + 1

    compiled, counter = _compiled(f)
    x = _sharded(mesh, 4, 4)
    for _ in range(3):
        _same(f(x, [Replicate()]), compiled(x, [Replicate()]))
    # Replicate() is new each call: guarded by ==, not identity, so no recompile; the mesh,
    # a reference type, by identity.
    assert counter.frame_count == 1
    guards = trace(f, x, [Replicate()]).guards
    assert "L['placements'][0]: VALUE_MATCH Replicate()" in guards
    assert any(line.startswith("closure['mesh']: ID_MATCH DeviceMesh") for line in guards)
    assert any(line.startswith("L['x'].device_mesh: ID_MATCH DeviceMesh") for line in guards)


def test_the_placement_methods_fold_and_shard_dims_are_read(mesh):
    from torch.distributed.tensor import Shard

    def f(x):
        (placement,) = x.placements
        if placement.is_shard() and placement.dim == 0:
            return x * 2
        return x * 3

    compiled, counter = _compiled(f)
    x = _sharded(mesh, 4, 4)
    _same(f(x), compiled(x))
    assert counter.frame_count == 1 and x.placements == (Shard(0),)


def test_fullgraph_captures_a_dtensor_function(mesh):
    def f(x):
        return (x @ x.T).relu()

    bytegraph.reset()
    x = _sharded(mesh, 4, 4)
    _same(f(x), bytegraph.compile(f, backend="aot_eager", fullgraph=True)(x))


@pytest.mark.parametrize("dynamic", [None, True])
def test_a_batch_size_sweep_on_a_sharded_dtensor_gives_eagers_results(mesh, dynamic):
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    def f(x):
        return (x * 2).redistribute(mesh, [Replicate()]).to_local().sum(0) + x.shape[0]

    bytegraph.reset()
    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(f, backend=counter, dynamic=dynamic)
    for rows in (4, 6, 8, 5):
        x = distribute_tensor(torch.randn(rows, 3), mesh, [Shard(0)])
        torch.testing.assert_close(compiled(x), f(x))
    # As for a plain tensor: automatic dynamic shapes recompile once, dynamic=True not at all.
    assert counter.frame_count == (2 if dynamic is None else 1)


def test_a_dynamic_dtensors_spec_is_guarded_without_its_shape_and_its_local_sizes_by_the_shape_guards(mesh):
    from torch.distributed.tensor import Shard, distribute_tensor

    bytegraph.reset()
    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(lambda x: x * 2 + x.to_local().shape[0], backend=counter, dynamic=True)
    for rows in (4, 6, 8, 5):
        x = distribute_tensor(torch.randn(rows, 3), mesh, [Shard(0)])
        _same(x * 2 + rows, compiled(x))
    assert counter.frame_count == 1
    guards = trace(lambda x: x * 2, x).guards
    assert "L['x']: TENSOR_SUBCLASS_METADATA_MATCH" in " ".join(guards)


def test_a_meshs_registered_members_run_for_real_and_full_tensor_and_no_grad_to_local_are_captured(mesh):
    # DeviceMesh registers which members are safe to run at compile time (size, ndim,
    # get_local_rank): they fold to constants, as under torch.compile.
    def f(x):
        with torch.no_grad():
            local = x.to_local() + 1
        return x.full_tensor() * x.device_mesh.size() + mesh.get_local_rank() + mesh.ndim + local

    compiled, counter = _compiled(f)
    x = _sharded(mesh, 4, 4)
    _same(f(x), compiled(x))
    assert counter.frame_count == 1
