"""What each rank runs for tests/test_distributed.py: eager and bytegraph training side by side
(launched by tests/_spawn.py; each scenario returns what it observed: losses, parameter
differences, what was captured).

Every scenario trains the same model from the same weights a few SGD steps twice, eagerly
and compiled, each rank on its own data, and reports both.
"""

import logging

import torch
import torch.distributed as dist

import bytegraph
from bytegraph.testing import CompileCounter, CompileCounterWithBackend

WIDTH = 512  # a 512x512 Linear has 1 MiB of weights: with 1 MiB buckets, one bucket per layer
LAYERS = 3
STEPS = 3
BATCH = 8


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.linear = torch.nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.linear(x)) + x


class Tower(torch.nn.Module):
    """Blocks and a head: the shape FSDP2 shards block by block."""

    def __init__(self, width=64, blocks=3):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(width) for _ in range(blocks))
        self.head = torch.nn.Linear(width, 8)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def _batch(step, width, sizes=None):
    generator = torch.Generator().manual_seed(1000 * dist.get_rank() + step)
    return torch.randn(sizes[step] if sizes else BATCH, width, generator=generator)


def train(model, width, steps=STEPS, on_step=None, sizes=None):
    """Losses of `steps` SGD steps; on_step(step) may return a context for that step; sizes:
    the batch size of each step (default: BATCH)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(steps):
        with on_step(step) if on_step else _no_context():
            loss = model(_batch(step, width, sizes)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


class _no_context:
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


def _max_difference(expected, actual):
    """Largest absolute difference between two lists of tensors."""
    return max(float((a.detach() - b.detach()).abs().max()) for a, b in zip(expected, actual))


def _full(parameters):
    """Each parameter whole (FSDP2 parameters are DTensor shards: gathered, a collective)."""
    return [p.full_tensor() if hasattr(p, "full_tensor") else p for p in parameters]


def _mlp():
    torch.manual_seed(0)
    return MLP()


def _ddp(module, **options):
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(module, bucket_cap_mb=1, **options)


_eager_ddp = {}


def _eager_ddp_run():
    """Eager DDP on the MLP (run once, shared by the DDP scenarios)."""
    if not _eager_ddp:
        model = _ddp(_mlp())
        _eager_ddp["losses"] = train(model, WIDTH)
        _eager_ddp["params"] = [p.detach().clone() for p in model.parameters()]
    return _eager_ddp


def _against_eager_ddp(model, losses):
    reference = _eager_ddp_run()
    return {"eager_losses": reference["losses"], "losses": losses,
            "param_difference": _max_difference(reference["params"], list(model.parameters()))}


def _explain_ddp():
    """explain() of a fresh DDP around the MLP: one forward and its backward."""
    bytegraph.reset()
    model = _ddp(_mlp())
    output = bytegraph.explain(model)(_batch(0, WIDTH))
    bytegraph.reset()
    return {"graph_count": output.graph_count, "ddp_splits": list(output.ddp_splits),
            "summary_mentions_splits": "DDP Splits per Graph" in str(output)}


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


# --- DDP ------------------------------------------------------------------------------------


def ddp_of_compiled():
    """DDP(bytegraph.compile(model)): the graph split at the 1 MiB buckets, one piece per layer."""
    bytegraph.reset()
    counter = CompileCounter()
    records = _Records()
    ddp_logger = logging.getLogger("bytegraph.ddp")
    ddp_logger.addHandler(records)
    bytegraph.set_logs(ddp=True)
    try:
        model = _ddp(bytegraph.compile(_mlp(), backend=counter))
        losses = train(model, WIDTH)
    finally:
        bytegraph.set_logs()
        ddp_logger.removeHandler(records)
    result = _against_eager_ddp(model, losses)
    result.update(pieces_compiled=counter.frame_count, op_count=counter.op_count, ddp_log=records.messages,
                  explain=_explain_ddp())
    return result


def compiled_ddp_aot_eager():
    """bytegraph.compile(DDP(model)) with AOTAutograd: each piece has its own backward, so a
    bucket's all-reduce starts while earlier pieces' backward has yet to run."""
    bytegraph.reset()
    counter = CompileCounterWithBackend("aot_eager")
    model = _ddp(_mlp())
    events = []
    model.register_comm_hook(None, _recording_allreduce(events))
    compiled = bytegraph.compile(model, backend=counter)
    losses = train(compiled, WIDTH, on_step=_record_backward_order(events))
    result = _against_eager_ddp(model, losses)
    result.update(pieces_compiled=counter.frame_count, backward_events=events)
    return result


def ddp_unsplit():
    """config.optimize_ddp = False: one graph, one backward (buckets all-reduce after it)."""
    bytegraph.reset()
    counter = CompileCounterWithBackend("aot_eager")
    with bytegraph.config.patch(optimize_ddp=False):
        model = _ddp(_mlp())
        events = []
        model.register_comm_hook(None, _recording_allreduce(events))
        losses = train(bytegraph.compile(model, backend=counter), WIDTH, on_step=_record_backward_order(events))
        explained = _explain_ddp()
    result = _against_eager_ddp(model, losses)
    result.update(pieces_compiled=counter.frame_count, backward_events=events, explain=explained)
    return result


def ddp_dynamic_batch():
    """A batch size that changes: the recompiled graph has a symbolic batch size and is split
    too (its pieces take the size as an input), then serves every later size."""
    sizes = [8, 8, 6, 5, 7]
    bytegraph.reset()
    reference = _ddp(_mlp())
    eager_losses = train(reference, WIDTH, steps=len(sizes), sizes=sizes)
    counter = CompileCounterWithBackend("aot_eager")
    model = _ddp(bytegraph.compile(_mlp(), backend=counter))
    pieces = []  # compiled so far, before each step and after the last

    def count_pieces(step):
        pieces.append(counter.frame_count)
        return _no_context()

    losses = train(model, WIDTH, steps=len(sizes), sizes=sizes, on_step=count_pieces)
    pieces.append(counter.frame_count)
    return {"eager_losses": eager_losses, "losses": losses,
            "param_difference": _max_difference(list(reference.parameters()), list(model.parameters())),
            "pieces_after_each_step": pieces[1:]}


def _recording_allreduce(events):
    """DDP's own all-reduce, noting when each bucket is launched."""
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    def hook(state, bucket):
        events.append("allreduce")
        return allreduce_hook(state, bucket)

    return hook


def _record_backward_order(events):
    """For the last step (DDP has rebuilt its buckets by then): note each time a backward
    unpacks a saved activation, between the all-reduce launches."""

    def on_step(step):
        events.clear()
        if step < STEPS - 1:
            return _no_context()
        return torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: events.append("unpack") or t)

    return on_step


# --- FSDP2 ----------------------------------------------------------------------------------


def _tower():
    torch.manual_seed(0)
    return Tower()


def _shard_blocks_and_root(model):
    from torch.distributed.fsdp import fully_shard

    for block in model.blocks:
        fully_shard(block)
    return fully_shard(model)


def _eager_fsdp():
    model = _shard_blocks_and_root(_tower())
    losses = train(model, 64)
    return losses, _full(model.parameters())


def fsdp_compiled_whole():
    """fully_shard on each block and the root, then bytegraph.compile of the whole model."""
    bytegraph.reset()
    eager_losses, eager_params = _eager_fsdp()
    counter = CompileCounter()
    model = _shard_blocks_and_root(_tower())
    losses = train(bytegraph.compile(model, backend=counter), 64)
    return {"eager_losses": eager_losses, "losses": losses,
            "param_difference": _max_difference(eager_params, _full(model.parameters())),
            "graphs": counter.frame_count, "op_count": counter.op_count}


def fsdp_per_block():
    """Each block compiled, then sharded: fully_shard(bytegraph.compile(block))."""
    from torch.distributed.fsdp import FSDPModule, fully_shard

    bytegraph.reset()
    eager_losses, eager_params = _eager_fsdp()
    counter = CompileCounter()
    model = _tower()
    for index, block in enumerate(model.blocks):
        model.blocks[index] = fully_shard(bytegraph.compile(block, backend=counter))
    fully_shard(model)
    losses = train(model, 64)
    states = [fully_shard.state(block) for block in model.blocks]
    return {"eager_losses": eager_losses, "losses": losses,
            "param_difference": _max_difference(eager_params, _full(model.parameters())),
            "graphs": counter.frame_count, "op_count": counter.op_count,
            "blocks_are_sharded_wrappers": all(isinstance(b, FSDPModule) and isinstance(b, bytegraph.OptimizedModule)
                                               for b in model.blocks),
            "originals_unchanged": all(type(b._orig_mod) is Block for b in model.blocks),
            "blocks_not_root": [state._is_root for state in states]}


# --- tensor parallelism (DTensor) -----------------------------------------------------------


class FeedForward(torch.nn.Module):
    """A residual MLP block: the colwise/rowwise pair of tensor parallelism."""

    def __init__(self, width=16):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, 4 * width)
        self.fc2 = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class Attention(torch.nn.Module):
    """Self-attention whose heads tensor parallelism splits across ranks (q/k/v colwise, the
    output projection rowwise): the local tensors hold heads / ranks heads, hence -1."""

    def __init__(self, width=16, heads=4):
        super().__init__()
        self.head_dim = width // heads
        self.q = torch.nn.Linear(width, width)
        self.k = torch.nn.Linear(width, width)
        self.v = torch.nn.Linear(width, width)
        self.o = torch.nn.Linear(width, width)

    def forward(self, x):
        batch, length, _ = x.shape
        q, k, v = (proj(x).view(batch, length, -1, self.head_dim).transpose(1, 2) for proj in (self.q, self.k, self.v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.o(y.transpose(1, 2).reshape(batch, length, -1))


def _mesh_1d():
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", (dist.get_world_size(),))


def _tp_feed_forward(mesh):
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(0)
    return parallelize_module(FeedForward(), mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})


def _tp_attention(mesh):
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    torch.manual_seed(0)
    plan = {"q": ColwiseParallel(), "k": ColwiseParallel(), "v": ColwiseParallel(), "o": RowwiseParallel()}
    return parallelize_module(Attention(), mesh, plan)


def _train_tp(model, batch_shape, steps=STEPS, rows=None):
    """Each rank sees the same batch (tensor parallelism splits the weights, not the data);
    rows: the batch size of each step, where it changes."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(len(rows) if rows else steps):
        shape = (rows[step], *batch_shape[1:]) if rows else batch_shape
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(step))
        out = model(x)
        loss = out.pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, out


def _tp_against_eager(make, batch_shape, backend, rows=None):
    bytegraph.reset()
    mesh = _mesh_1d()
    eager_model = make(mesh)
    eager_losses, _ = _train_tp(eager_model, batch_shape, rows=rows)
    counter = CompileCounterWithBackend(backend)
    model = make(mesh)
    losses, out = _train_tp(bytegraph.compile(model, backend=counter), batch_shape, rows=rows)
    return {"eager_losses": eager_losses, "losses": losses,
            "param_difference": _max_difference(_full(eager_model.parameters()), _full(model.parameters())),
            "graphs": counter.frame_count, "op_count": counter.op_count,
            "output_type": type(out).__name__, "output_requires_grad": out.requires_grad,
            "parameters_are_dtensors": all(type(p).__name__ == "DTensor" or type(p.data).__name__ == "DTensor"
                                           for p in model.parameters())}


def tp_feed_forward_aot_eager():
    return _tp_against_eager(_tp_feed_forward, (4, 16), "aot_eager")


def tp_feed_forward_eager():
    return _tp_against_eager(_tp_feed_forward, (4, 16), "eager")


def tp_feed_forward_dynamic_batch():
    return _tp_against_eager(_tp_feed_forward, (4, 16), "aot_eager", rows=[4, 4, 6, 5, 7])


def tp_attention_aot_eager():
    return _tp_against_eager(_tp_attention, (2, 6, 16), "aot_eager")


def dtensor_redistribute():
    """A function on a sharded DTensor that gathers it (an all-gather in the graph), then one
    given the replicated DTensor: guarded on the placements, so it recompiles."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    bytegraph.reset()
    mesh = _mesh_1d()

    def gather(x):
        return (x * 2).redistribute(mesh, [Replicate()]).to_local() + 1

    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(gather, backend=counter)
    full = torch.arange(32.0).reshape(8, 4)
    sharded = distribute_tensor(full, mesh, [Shard(0)])
    results = [compiled(sharded), compiled(sharded)]
    graphs_after_repeat = counter.frame_count
    replicated = distribute_tensor(full, mesh, [Replicate()])
    results.append(compiled(replicated))
    expected = [gather(sharded), gather(sharded), gather(replicated)]
    return {"matches_eager": all(torch.equal(torch.as_tensor(a), torch.as_tensor(b)) for a, b in zip(results, expected)),
            "is_the_whole_tensor": torch.equal(torch.as_tensor(results[0]), full * 2 + 1),
            "output_type": type(results[0]).__name__,
            "graphs_after_repeat": graphs_after_repeat, "graphs": counter.frame_count}


# --- 2-D: FSDP2 x tensor parallelism (4 ranks) ------------------------------------------------


class FeedForwardTower(torch.nn.Module):
    def __init__(self, width=16, blocks=2):
        super().__init__()
        self.blocks = torch.nn.ModuleList(FeedForward(width) for _ in range(blocks))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def _two_d(compile_with=None):
    """torchtitan's recipe on a 2x2 mesh: tensor parallelism inside each block over "tp", each
    block compiled, then FSDP2 over "dp" on the blocks and the root."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    torch.manual_seed(0)
    model = FeedForwardTower()
    for index, block in enumerate(model.blocks):
        parallelize_module(block, mesh["tp"], {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
        if compile_with is not None:
            block = bytegraph.compile(block, backend=compile_with)
        model.blocks[index] = fully_shard(block, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    # Each data-parallel replica sees its own batches; the tensor-parallel ranks of one share them.
    data_rank = mesh["dp"].get_local_rank()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(STEPS):
        x = torch.randn(4, 16, generator=torch.Generator().manual_seed(100 * data_rank + step))
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, _full(model.parameters())


def fsdp_tp_2d():
    bytegraph.reset()
    eager_losses, eager_params = _two_d()
    counter = CompileCounterWithBackend("aot_eager")
    losses, params = _two_d(counter)
    return {"eager_losses": eager_losses, "losses": losses, "param_difference": _max_difference(eager_params, params),
            "graphs": counter.frame_count}


SCENARIOS = {fn.__name__: fn for fn in (ddp_of_compiled, compiled_ddp_aot_eager, ddp_unsplit, ddp_dynamic_batch,
                                        fsdp_compiled_whole, fsdp_per_block, tp_feed_forward_aot_eager,
                                        tp_feed_forward_eager, tp_feed_forward_dynamic_batch, tp_attention_aot_eager,
                                        dtensor_redistribute)}
# Launched apart, on 4 ranks (a 2x2 mesh).
ON_4_RANKS = ("fsdp_tp_2d",)
SCENARIOS["fsdp_tp_2d"] = fsdp_tp_2d
