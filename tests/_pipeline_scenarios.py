"""What each rank runs for tests/test_pipeline_parallel.py: pipeline parallelism, eager and
compiled (launched by tests/_spawn.py).

The model (Linear+ReLU layers, a Linear at the end) is split by hand in 2 stages: rank 0 holds
the first half, rank 1 the second. Each scenario trains it a few SGD steps with one of
torch.distributed.pipelining's schedules (microbatches, MSE loss on the last stage), the stage
module either as is (eager pipelining) or through bytegraph.compile, from the same weights on
the same data; it reports the last stage's losses, this rank's parameters after training, and
what bytegraph captured (graphs compiled, their ops, graphs compiled and compiled-code runs
by the end of each step).
"""

import torch
import torch.distributed as dist

import bytegraph
from tests._capture import RunCounter

WIDTH = 16
LAYERS = 4  # 3 Linear+ReLU and a last Linear: 2 Linears a stage
STEPS = 3
BATCH = 8
MICROBATCHES = 4  # microbatches of 2 rows


def _model():
    torch.manual_seed(0)
    layers = []
    for index in range(LAYERS):
        layers.append(torch.nn.Linear(WIDTH, WIDTH))
        if index < LAYERS - 1:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def _stage_module(rank, world_size):
    """This rank's share of the model's layers (same weights whatever the scenario)."""
    layers = list(_model())
    per_stage = len(layers) // world_size + (len(layers) % world_size > 0)
    return torch.nn.Sequential(*layers[rank * per_stage:(rank + 1) * per_stage])


def _batch(step):
    generator = torch.Generator().manual_seed(100 + step)
    return torch.randn(BATCH, WIDTH, generator=generator), torch.randn(BATCH, WIDTH, generator=generator)


def _schedule_class(name):
    from torch.distributed import pipelining

    return getattr(pipelining, name)


def train(schedule_name, backend):
    """Trains this rank's stage STEPS steps; backend None: eager pipelining, else the stage is
    bytegraph.compile'd with a RunCounter(backend)."""
    from torch.distributed.pipelining import PipelineStage

    rank, world_size = dist.get_rank(), dist.get_world_size()
    bytegraph.reset()
    module = _stage_module(rank, world_size)
    counter = None
    submodule = module
    if backend is not None:
        counter = RunCounter(backend)
        submodule = bytegraph.compile(module, backend=counter)
    stage = PipelineStage(submodule, rank, world_size, torch.device("cpu"))
    schedule = _schedule_class(schedule_name)(stage, MICROBATCHES, loss_fn=torch.nn.functional.mse_loss)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    losses, graphs_after_step, runs_after_step = [], [], []
    for step in range(STEPS):
        x, target = _batch(step)
        optimizer.zero_grad()
        step_losses = []
        if stage.is_first:
            schedule.step(x)
        else:
            schedule.step(target=target, losses=step_losses)
        optimizer.step()
        losses.append([loss.item() for loss in step_losses])
        if counter is not None:
            graphs_after_step.append(counter.frame_count)
            runs_after_step.append(counter.runs)
    result = {"losses": losses, "params": [p.detach().tolist() for p in module.parameters()]}
    if counter is not None:
        result.update(graphs=counter.frame_count, op_count=counter.op_count,
                      graphs_after_step=graphs_after_step,
                      runs_after_step=runs_after_step,
                      graph_ops=[[str(node.target) for node in gm.graph.nodes if node.op.startswith("call_")]
                                 for gm in counter.graphs])
    bytegraph.reset()
    return result


def _scenario(schedule_name, backend):
    def run():
        return train(schedule_name, backend)

    run.__name__ = f"{schedule_name}_{backend or 'uncompiled'}"
    return run


SCENARIOS = {fn.__name__: fn for fn in (_scenario(schedule, backend)
                                        for schedule in ("ScheduleGPipe", "Schedule1F1B")
                                        for backend in (None, "eager", "aot_eager"))}
