"""Distributed training on the CPU over gloo (DDP, tensor parallelism, FSDP2 x TP): eager,
torch.compile and bytegraph, in one run.

    PYTHONPATH=. python -m benchmarks.distributed                 # writes benchmarks/results/distributed.md
    PYTHONPATH=. python -m benchmarks.distributed --steps 10 --out /tmp/distributed.md
    PYTHONPATH=. python -m benchmarks.distributed --only tp,2d    # rerun parts (--only tp --only 2d alike)

Three parts; in each, every variant trains the same model from the same weights on the same data
with SGD, the compiled ones with inductor.

DDP, 2 ranks: an MLP, each rank on its own batches.

- eager DDP: `DDP(model)`;
- torch DDP(compile): `DDP(torch.compile(model))`;
- bytegraph DDP(compile): `DDP(bytegraph.compile(model))`;
- bytegraph compile(DDP): `bytegraph.compile(DDP(model))`;
- bytegraph compile(DDP), unsplit: the same with `config.optimize_ddp = False` (one graph).

Tensor parallelism (TP), 2 ranks on `init_device_mesh("cpu", (2,))`: two residual feed-forward
blocks, `x + fc2(relu(fc1(x)))`, each `parallelize_module(block, mesh, {"fc1": ColwiseParallel(),
"fc2": RowwiseParallel()})`; every rank trains on the same batch (TP splits the weights, not the data).

- eager TP;
- torch compile(TP): `torch.compile(model)`;
- bytegraph compile(TP): `bytegraph.compile(model)`.

2-D, FSDP2 x TP, 4 ranks on `init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))`,
torchtitan's recipe: the same blocks, each parallelized over mesh["tp"], then (compiled variants)
compiled, then `fully_shard(block, mesh=mesh["dp"])`, then `fully_shard(model, mesh=mesh["dp"])`;
the two ranks of a data-parallel replica share its batches.

- eager FSDP x TP;
- torch FSDP x TP, blocks compiled: `fully_shard(torch.compile(block))` per block;
- bytegraph FSDP x TP, blocks compiled: `fully_shard(bytegraph.compile(block))` per block.

First step: each variant runs its first training steps in its own processes with its own
empty TORCHINDUCTOR_CACHE_DIR, so no variant reuses kernels another compiled, from disk or from
memory; recorded: the first step (compiling included, the slowest rank's), the pieces compiled
(the graphs handed to the backend, counted by torch._dynamo.testing's and bytegraph.testing's
CompileCounterWithBackend; DDP splits the graph at its buckets), inductor's cache counters and
whether the losses of the first 3 steps equal those of the part's eager variant (relative 1e-4,
rank 0). DDP only: the two DDP(compile) variants then run again in new processes on the cache
directory their first run filled: their first step with inductor's caches warm, as a second job
or rank on the same machine sees it.

Steps per second: all variants of a part in the same processes, each after its first steps, timed
in interleaved batches (median, rank 0; the ranks wait on each other every step): on a shared
machine, load changes between processes are larger than the differences measured.

A variant that fails (an exception on any rank, a crash, a timeout) is reported as failed in its
row and its error under the table; the whole traceback is printed. With --only, the sections of
the parts not rerun are kept from the existing output file (each section has its own run times).
"""

import argparse
import datetime
import functools
import json
import os
import re
import tempfile
import time
import traceback

import torch

from benchmarks.timing import clock, load_average, machine_info, median

PARTS = ("ddp", "tp", "2d")
WORLD_SIZES = {"ddp": 2, "tp": 2, "2d": 4}
VARIANTS = {  # the first of each part is the eager variant the others are compared with
    "ddp": ("eager DDP", "torch DDP(compile)", "bytegraph DDP(compile)", "bytegraph compile(DDP)",
            "bytegraph compile(DDP), unsplit"),
    "tp": ("eager TP", "torch compile(TP)", "bytegraph compile(TP)"),
    "2d": ("eager FSDP x TP", "torch FSDP x TP, blocks compiled", "bytegraph FSDP x TP, blocks compiled"),
}
PART_OF = {variant: part for part, variants in VARIANTS.items() for variant in variants}
WARM_VARIANTS = ("torch DDP(compile)", "bytegraph DDP(compile)")

BATCH = 64
# DDP's MLP
WIDTH = 512
LAYERS = 4
BUCKET_CAP_MB = 1  # one bucket per 1 MiB Linear: DDP splits the graph in one piece per layer
# The feed-forward blocks of TP and 2-D
TP_WIDTH = 256
TP_HIDDEN = 1024
TP_BLOCKS = 2


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class FeedForward(torch.nn.Module):
    """A residual feed-forward block: fc1 split by columns, fc2 by rows under TP (one all-reduce
    of the output per block forward, one of the input's gradient per block backward)."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(TP_WIDTH, TP_HIDDEN)
        self.fc2 = torch.nn.Linear(TP_HIDDEN, TP_WIDTH)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class FeedForwardTower(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList(FeedForward() for _ in range(TP_BLOCKS))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


# --- building each variant: (model to train, pieces compiled so far, batch of a step) ----------


def _compiler(variant):
    """(compile function, counter of the graphs it hands inductor) of a compiled variant."""
    if variant.startswith("torch"):
        from torch._dynamo.testing import CompileCounterWithBackend

        counter = CompileCounterWithBackend("inductor")
        return functools.partial(torch.compile, backend=counter), counter
    import bytegraph
    from bytegraph.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("inductor")
    return functools.partial(bytegraph.compile, backend=counter), counter


def _seeded_batch(seed, width):
    return torch.randn(BATCH, width, generator=torch.Generator().manual_seed(seed))


def _build_ddp(variant):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = MLP()
    rank = dist.get_rank()
    batch = lambda step: _seeded_batch(1000 * rank + step, WIDTH)  # noqa: E731  (each rank its own data)
    if variant == "eager DDP":
        return DDP(model, bucket_cap_mb=BUCKET_CAP_MB), lambda: 0, batch
    compile, counter = _compiler(variant)
    if variant in ("torch DDP(compile)", "bytegraph DDP(compile)"):
        return DDP(compile(model), bucket_cap_mb=BUCKET_CAP_MB), lambda: counter.frame_count, batch
    return compile(DDP(model, bucket_cap_mb=BUCKET_CAP_MB)), lambda: counter.frame_count, batch


@functools.cache
def _mesh(shape, names=None):
    """One mesh per shape and process: the steady-state job builds every variant of a part in the
    same processes, and each init_device_mesh would make new process groups."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", shape, mesh_dim_names=names)


def _parallelize(block, mesh):
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    return parallelize_module(block, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})


def _build_tp(variant):
    mesh = _mesh((WORLD_SIZES["tp"],))
    torch.manual_seed(0)  # the same full weights on every rank, each then keeps its shard
    model = FeedForwardTower()
    for block in model.blocks:
        _parallelize(block, mesh)
    batch = lambda step: _seeded_batch(step, TP_WIDTH)  # noqa: E731  (the same on every rank)
    if variant == "eager TP":
        return model, lambda: 0, batch
    compile, counter = _compiler(variant)
    return compile(model), lambda: counter.frame_count, batch


def _build_2d(variant):
    from torch.distributed.fsdp import fully_shard

    mesh = _mesh((2, 2), ("dp", "tp"))
    compile, counter = (None, None) if variant == "eager FSDP x TP" else _compiler(variant)
    torch.manual_seed(0)
    model = FeedForwardTower()
    for index, block in enumerate(model.blocks):
        _parallelize(block, mesh["tp"])
        if compile is not None:
            block = compile(block)  # compiled inside FSDP's hooks: they gather and free around it
        model.blocks[index] = fully_shard(block, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    data_rank = mesh["dp"].get_local_rank()
    batch = lambda step: _seeded_batch(1000 * data_rank + step, TP_WIDTH)  # noqa: E731
    return model, (lambda: counter.frame_count) if counter else (lambda: 0), batch


_BUILDERS = {"ddp": _build_ddp, "tp": _build_tp, "2d": _build_2d}


# --- what the ranks run ------------------------------------------------------------------------


def _step(model, optimizer, x):
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


class _Trainer:
    """One variant's model and optimizer; its first steps compile it (the unsplit variant
    with config.optimize_ddp off while they do)."""

    def __init__(self, variant):
        import bytegraph

        self.variant = variant
        self.model, self.pieces, self.batch = _BUILDERS[PART_OF[variant]](variant)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.options = bytegraph.config.patch(optimize_ddp=variant != "bytegraph compile(DDP), unsplit")

    def first_steps(self):
        """(seconds of the first step, the slowest rank's; losses of the first 3 steps)."""
        import torch.distributed as dist

        with self.options:
            dist.barrier()
            start = clock()
            losses = [_step(self.model, self.optimizer, self.batch(0)).item()]
            slowest = torch.tensor([clock() - start])
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            for step in range(1, 3):  # DDP rebuilds its buckets after the first step
                losses.append(_step(self.model, self.optimizer, self.batch(step)).item())
        return float(slowest), losses

    def steps_per_second(self, steps):
        import torch.distributed as dist

        x = self.batch(3)
        dist.barrier()
        start = clock()
        for _ in range(steps):
            _step(self.model, self.optimizer, x)
        return steps / (clock() - start)


def _cache_counters():
    from torch._dynamo.utils import counters

    caches = {f"fx_{name}": counters["inductor"][f"fxgraph_cache_{name}"] for name in ("hit", "miss", "bypass")}
    caches.update({f"aot_{name}": counters["aot_autograd"][f"autograd_cache_{name}"] for name in ("hit", "miss", "bypass")})
    return caches


def _first_step_job(variant, steps, batches):
    trainer = _Trainer(variant)
    first_step, losses = trainer.first_steps()
    return {"first_step_s": first_step, "losses": losses, "pieces": trainer.pieces(), "caches": _cache_counters()}


def _steady_state_job(variants, steps, batches):
    """Every variant in the same processes, timed in interleaved batches: a change in the
    machine's load then hits every variant alike."""
    trainers = [_Trainer(variant) for variant in variants]
    for trainer in trainers:
        trainer.first_steps()
    rates = {variant: [] for variant in variants}
    for _ in range(batches):
        for trainer in trainers:
            rates[trainer.variant].append(trainer.steps_per_second(steps))
    return {variant: median(values) for variant, values in rates.items()}


_JOBS = {"first_step": _first_step_job, "steady_state": _steady_state_job}


def _rank_main(rank, world_size, port, job, argument, steps, batches, out_path):
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=600))
    try:
        import torch._inductor.compile_fx as _inductor  # noqa: F401  (import cost is not compile latency)

        result = _JOBS[job](argument, steps, batches)
        if rank == 0:
            with open(out_path, "w") as file:
                json.dump(result, file)
    finally:
        dist.destroy_process_group()


# --- launching ---------------------------------------------------------------------------------


def _free_port():
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_job(job, argument, cache_dir, world_size, steps=0, batches=0, timeout_s=900):
    """A job in `world_size` fresh processes with TORCHINDUCTOR_CACHE_DIR=cache_dir: rank 0's
    result. A rank that raises or dies ends the others and raises here, with its traceback."""
    import torch.multiprocessing as mp

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    with tempfile.TemporaryDirectory() as scratch:
        out_path = os.path.join(scratch, "result.json")
        context = mp.start_processes(_rank_main, args=(world_size, _free_port(), job, argument, steps, batches,
                                                       out_path),
                                     nprocs=world_size, join=False, start_method="spawn")
        deadline = time.monotonic() + timeout_s
        try:
            while not context.join(timeout=max(deadline - time.monotonic(), 0)):
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{job} {argument}: the ranks did not finish within {timeout_s} s")
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.terminate()
        with open(out_path) as file:
            return json.load(file)


def _run_or_error(job, argument, cache_dir, world_size, steps=0, batches=0):
    """run_job's result, or {"error": traceback} if it failed: one failing variant must not hide
    the others' numbers (its traceback is printed now, its last line goes in the report)."""
    try:
        return run_job(job, argument, cache_dir, world_size, steps, batches)
    except Exception:
        error = traceback.format_exc()
        print(f"--- {job} {argument} failed:\n{error}", flush=True)
        return {"error": error}


def _losses_equal(expected, actual):
    return all(abs(a - b) <= 1e-4 * max(1.0, abs(a)) for a, b in zip(expected, actual))


def measure(part, steps=20, batches=7):
    """(results per variant, warm-cache results per variant: DDP's two DDP(compile) only)."""
    variants, world_size = VARIANTS[part], WORLD_SIZES[part]
    results, warm = {}, {}
    with tempfile.TemporaryDirectory() as caches:
        for index, variant in enumerate(variants):
            cache_dir = os.path.join(caches, str(index))
            results[variant] = _run_or_error("first_step", variant, cache_dir, world_size)
            if variant in WARM_VARIANTS and "error" not in results[variant]:
                warm[variant] = _run_or_error("first_step", variant, cache_dir, world_size)
        working = [variant for variant in variants if "error" not in results[variant]]
        rates = _run_or_error("steady_state", working, os.path.join(caches, "steady"), world_size, steps, batches)
    for variant in working:
        if "error" in rates:
            results[variant]["error"] = rates["error"]
        else:
            results[variant]["steps_per_s"] = rates[variant]
    eager_losses = results[variants[0]].get("losses")
    for result in list(results.values()) + list(warm.values()):
        if eager_losses is not None and "losses" in result:
            result["matches_eager"] = _losses_equal(eager_losses, result["losses"])
    return results, warm


# --- the report --------------------------------------------------------------------------------


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _cache_text(caches):
    return (f"{caches['fx_hit']} hit / {caches['fx_miss']} miss / {caches['fx_bypass']} bypass; "
            f"AOTAutograd: {caches['aot_hit']} / {caches['aot_miss']} / {caches['aot_bypass']}")


def _matches_text(result):
    if "matches_eager" not in result:
        return "failed" if "losses" not in result else "no eager losses"
    return "yes" if result["matches_eager"] else f"NO: {', '.join(f'{loss:.6g}' for loss in result['losses'])}"


def _error_line(error):
    """The exception's line of a traceback (a rank's is nested in ProcessRaisedException's)."""
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "?"


def _results_table(part, results):
    """variant | first step | steps/s | vs eager | pieces | losses, then each failure's error."""
    eager = VARIANTS[part][0]
    eager_rate = results[eager].get("steps_per_s")
    lines = [f"| variant | first step (s) | steps/s | vs {eager} | pieces compiled | losses equal eager's |",
             "|---|---:|---:|---:|---:|---|"]
    for variant, result in results.items():
        first = f"{result['first_step_s']:.2f}" if "first_step_s" in result else "failed"
        rate = result.get("steps_per_s")
        ratio = f"{rate / eager_rate:.2f}x" if rate and eager_rate else "-"
        lines.append(f"| {variant} | {first} | {f'{rate:.1f}' if rate else 'failed'} | {ratio} | "
                     f"{result.get('pieces', '-')} | {_matches_text(result)} |")
    failures = [(variant, result["error"]) for variant, result in results.items() if "error" in result]
    if failures:
        lines += ["", "Failed (the whole traceback is in the run's output):", ""]
        lines += [f"- {variant}: `{_error_line(error)}`" for variant, error in failures]
    return lines


def _run_line(run):
    return (f"Run from {run['started']} to {run['finished']}; load average (1, 5, 15 min) before: "
            f"{run['load_before']}, after: {run['load_after']}.")


def _method_lines(steps, batches, ranks):
    return [
        "- First step: the first training step, compilation included, the slowest rank's; each variant in "
        "new processes with an empty inductor cache.",
        f"- Steps per second: all variants in the same {ranks} processes, after their first 3 steps, timed in "
        f"{batches} interleaved batches of {steps} steps (median, rank 0).",
    ]


def _ddp_section(results, warm, run, steps, batches):
    lines = [
        "## DDP, 2 ranks",
        "",
        _run_line(run),
        "",
        f"An MLP of {LAYERS} Linear({WIDTH}, {WIDTH}) layers with ReLU (4.0 MiB of fp32 parameters), batch "
        f"{BATCH} per rank, SGD; DDP with `bucket_cap_mb={BUCKET_CAP_MB}`; the compiled variants use inductor.",
        "",
        *_method_lines(steps, batches, 2),
        "- Pieces: the graphs the compiler was handed; under DDP both torch.compile and bytegraph split the "
        "forward at bucket boundaries (torch's DDPOptimizer), one piece per 1 MiB layer here.",
        "- Losses of the first 3 steps compared with eager DDP's (relative 1e-4).",
        "",
        *_results_table("ddp", results),
        "",
        "### First step with inductor's caches warm",
        "",
        "The same variant run again in new processes on the cache directory its first run filled (what a "
        "second job, or a rank that starts after another, sees on the same machine). Cache counters of rank 0: "
        "inductor's FX graph cache (forward and backward of each piece) and AOTAutograd's cache (which "
        "torch bypasses for graphs split by DDPOptimizer, under torch.compile as under bytegraph).",
        "",
        "| variant | first step, cold (s) | first step, warm cache (s) | caches, cold run | caches, warm run | "
        "losses equal eager's |",
        "|---|---:|---:|---|---|---|",
    ]
    for variant, result in warm.items():
        cold = results[variant]
        if "error" in result:
            lines.append(f"| {variant} | {cold['first_step_s']:.2f} | failed | {_cache_text(cold['caches'])} | "
                         f"`{_error_line(result['error'])}` | failed |")
            continue
        lines.append(f"| {variant} | {cold['first_step_s']:.2f} | {result['first_step_s']:.2f} | "
                     f"{_cache_text(cold['caches'])} | {_cache_text(result['caches'])} | {_matches_text(result)} |")
    return lines


def _feed_forward_text(mesh):
    parameters = TP_BLOCKS * (2 * TP_WIDTH * TP_HIDDEN + TP_HIDDEN + TP_WIDTH)
    return (f"{TP_BLOCKS} residual feed-forward blocks, `x + fc2(relu(fc1(x)))` with fc1 = Linear({TP_WIDTH}, "
            f"{TP_HIDDEN}) and fc2 = Linear({TP_HIDDEN}, {TP_WIDTH}) ({parameters * 4 / 2**20:.1f} MiB of fp32 "
            f"parameters), each block `parallelize_module(block, {mesh}, {{\"fc1\": ColwiseParallel(), "
            f"\"fc2\": RowwiseParallel()}})`")


def _tp_section(results, warm, run, steps, batches):
    return [
        "## Tensor parallelism, 2 ranks",
        "",
        _run_line(run),
        "",
        f"{_feed_forward_text('mesh')} on `init_device_mesh(\"cpu\", (2,))`: each rank holds half of every weight, "
        "and the blocks' outputs and input gradients are all-reduced (one all-reduce per block forward, one per "
        f"block backward). Every rank trains on the same batch ({BATCH} x {TP_WIDTH}, seeded by the step only), "
        "SGD. torch compile(TP) is `torch.compile(model)`, bytegraph compile(TP) `bytegraph.compile(model)`, "
        "both with inductor: the graphs hold DTensor operations (the collectives included).",
        "",
        *_method_lines(steps, batches, 2),
        "- Pieces: the graphs handed to inductor (a graph break, or a recompilation in the first 3 steps, adds "
        "one).",
        "- Losses of the first 3 steps compared with eager TP's (relative 1e-4, rank 0).",
        "",
        *_results_table("tp", results),
    ]


def _2d_section(results, warm, run, steps, batches):
    blocks = _feed_forward_text('mesh["tp"]')
    return [
        "## FSDP2 x tensor parallelism (2-D), 4 ranks",
        "",
        _run_line(run),
        "",
        f"torchtitan's recipe on `init_device_mesh(\"cpu\", (2, 2), mesh_dim_names=(\"dp\", \"tp\"))`: "
        f"{blocks}, then, in the compiled variants, each block "
        "compiled (`torch.compile(block)` or `bytegraph.compile(block)`, inductor), then "
        "`model.blocks[i] = fully_shard(block, mesh=mesh[\"dp\"])` and `fully_shard(model, mesh=mesh[\"dp\"])`: "
        "FSDP's hooks gather each block's parameters around the compiled block and reduce-scatter its gradients "
        "outside it. The two ranks of a data-parallel replica share its batches (seeded by "
        f"`mesh[\"dp\"].get_local_rank()` and the step, {BATCH} x {TP_WIDTH}), SGD. The 4 ranks share the machine's "
        "cores (see Machine): their compilations and steps compete for them.",
        "",
        *_method_lines(steps, batches, 4),
        "- Pieces: the graphs handed to inductor, both blocks together. The blocks run the same code: "
        "torch.compile shares one graph between them but makes a second because the first block's input "
        "(the batch) does not require grad and the second's does; bytegraph makes one per block, each "
        "pinning its block's parameters (so with more blocks it compiles more graphs).",
        "- Losses of the first 3 steps compared with eager FSDP x TP's (relative 1e-4, rank 0).",
        "",
        *_results_table("2d", results),
    ]


_SECTIONS = {"ddp": _ddp_section, "tp": _tp_section, "2d": _2d_section}
_MARKER = "<!-- part: {} -->"


def _kept_sections(path):
    """The part sections of an earlier report, by part (each starts at its marker)."""
    if not os.path.exists(path):
        return {}
    with open(path) as file:
        text = file.read()
    pieces = re.split(r"^<!-- part: (\w+) -->\n", text, flags=re.MULTILINE)
    return {part: _MARKER.format(part) + "\n" + body for part, body in zip(pieces[1::2], pieces[2::2])}


def report(measured, kept, info, steps, batches):
    """The whole report: header, machine, then each part's section (measured now, or kept)."""
    lines = [
        "# Distributed training on the CPU over gloo: eager, torch.compile and bytegraph",
        "",
        "Generated by `PYTHONPATH=. python -m benchmarks.distributed` (see its docstring for the method); "
        "`--only PART` reruns one part and keeps the others' sections.",
        "",
        "## Machine",
        "",
        f"- CPU: {info['cpu']}, {info['cores']} cores; 1 torch thread per rank (2 ranks for DDP and TP, 4 for 2-D)",
        f"- Python {info['python']}, torch {info['torch']}",
        "",
    ]
    text = "\n".join(lines) + "\n"
    for part in PARTS:
        if part in measured:
            results, warm, run = measured[part]
            text += "\n".join([_MARKER.format(part), *_SECTIONS[part](results, warm, run, steps, batches), ""]) + "\n"
        elif part in kept:
            text += kept[part].rstrip("\n") + "\n\n"
    return text.rstrip("\n") + "\n"


def _parts(values):
    """--only's values ("tp", "tp,2d", repeated) as parts in report order; all when none given."""
    if not values:
        return list(PARTS)
    named = {name.strip() for value in values for name in value.split(",") if name.strip()}
    unknown = named - set(PARTS)
    if unknown:
        raise SystemExit(f"--only: unknown part(s) {sorted(unknown)}; choose from {', '.join(PARTS)}")
    return [part for part in PARTS if part in named]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="steps per timed batch")
    parser.add_argument("--batches", type=int, default=7, help="timed batches (the median is reported)")
    parser.add_argument("--only", action="append", metavar="{ddp,tp,2d}",
                        help="run only these parts (a comma list, or repeated); the default runs all")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "distributed.md"))
    args = parser.parse_args(argv)
    parts = _parts(args.only)
    info = machine_info()
    measured = {}
    for part in parts:
        run = {"started": _now(), "load_before": load_average()}
        results, warm = measure(part, args.steps, args.batches)
        run.update(finished=_now(), load_after=load_average())
        measured[part] = (results, warm, run)
    kept = _kept_sections(args.out) if len(parts) < len(PARTS) else {}
    text = report(measured, kept, info, args.steps, args.batches)
    with open(args.out, "w") as file:
        file.write(text)
    print(text)


if __name__ == "__main__":
    main()
