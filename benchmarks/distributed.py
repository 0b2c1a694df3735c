"""DDP training on the CPU, 2 gloo ranks: eager, torch.compile and bytegraph, in one run.

    PYTHONPATH=. python -m benchmarks.distributed                 # writes benchmarks/results/distributed.md
    PYTHONPATH=. python -m benchmarks.distributed --steps 10 --out /tmp/distributed.md

Variants (the same MLP, the same data, SGD; the compiled ones with inductor):

- eager DDP: `DDP(model)`;
- torch DDP(compile): `DDP(torch.compile(model))`;
- bytegraph DDP(compile): `DDP(bytegraph.compile(model))`;
- bytegraph compile(DDP): `bytegraph.compile(DDP(model))`;
- bytegraph compile(DDP), unsplit: the same with `config.optimize_ddp = False` (one graph).

First step: each variant runs its first training steps in its own 2 processes with its own
empty TORCHINDUCTOR_CACHE_DIR, so no variant reuses kernels another compiled, from disk or from
memory; recorded: the first step (compiling included, the slower rank's), the pieces the
compiler made (DDP splits the graph at its buckets), inductor's cache counters and whether the
first losses equal eager DDP's. The two DDP(compile) variants then run again in new processes
on the cache directory their first run filled: their first step with inductor's caches warm,
as a second job or rank on the same machine sees it.

Steps per second: all variants in the same 2 processes, each after its first steps, timed in
interleaved batches (median, rank 0; the ranks wait on each other every step): on a shared
machine, load changes between processes are larger than the differences measured.
"""

import argparse
import datetime
import json
import os
import tempfile
import time

import torch

from benchmarks.timing import clock, load_average, machine_info, median

WORLD_SIZE = 2
WIDTH = 512
LAYERS = 4
BATCH = 64
BUCKET_CAP_MB = 1  # one bucket per 1 MiB Linear: DDP splits the graph in one piece per layer

VARIANTS = ("eager DDP", "torch DDP(compile)", "bytegraph DDP(compile)", "bytegraph compile(DDP)",
            "bytegraph compile(DDP), unsplit")
WARM_VARIANTS = ("torch DDP(compile)", "bytegraph DDP(compile)")


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def _build(variant):
    """(model to train, function returning the pieces compiled so far)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    import bytegraph
    from bytegraph.testing import CompileCounterWithBackend

    torch.manual_seed(0)
    model = MLP()
    if variant == "eager DDP":
        return DDP(model, bucket_cap_mb=BUCKET_CAP_MB), lambda: 0
    if variant == "torch DDP(compile)":
        from torch._dynamo.testing import CompileCounterWithBackend as TorchCounter

        counter = TorchCounter("inductor")
        return DDP(torch.compile(model, backend=counter), bucket_cap_mb=BUCKET_CAP_MB), lambda: counter.frame_count
    counter = CompileCounterWithBackend("inductor")
    if variant == "bytegraph DDP(compile)":
        return DDP(bytegraph.compile(model, backend=counter), bucket_cap_mb=BUCKET_CAP_MB), lambda: counter.frame_count
    return bytegraph.compile(DDP(model, bucket_cap_mb=BUCKET_CAP_MB), backend=counter), lambda: counter.frame_count


def _batch(step):
    import torch.distributed as dist

    generator = torch.Generator().manual_seed(1000 * dist.get_rank() + step)
    return torch.randn(BATCH, WIDTH, generator=generator)


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
        self.model, self.pieces = _build(variant)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.options = bytegraph.config.patch(optimize_ddp=variant != "bytegraph compile(DDP), unsplit")

    def first_steps(self):
        """(seconds of the first step, the slower rank's; losses of the first 3 steps)."""
        import torch.distributed as dist

        with self.options:
            dist.barrier()
            start = clock()
            losses = [_step(self.model, self.optimizer, _batch(0)).item()]
            slowest = torch.tensor([clock() - start])
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            for step in range(1, 3):  # DDP rebuilds its buckets after the first step
                losses.append(_step(self.model, self.optimizer, _batch(step)).item())
        return float(slowest), losses

    def steps_per_second(self, steps):
        import torch.distributed as dist

        x = _batch(3)
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


def _rank_main(rank, port, job, argument, steps, batches, out_path):
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE, timeout=datetime.timedelta(seconds=600))
    try:
        import torch._inductor.compile_fx as _inductor  # noqa: F401  (import cost is not compile latency)

        result = _JOBS[job](argument, steps, batches)
        if rank == 0:
            with open(out_path, "w") as file:
                json.dump(result, file)
    finally:
        dist.destroy_process_group()


def _free_port():
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_job(job, argument, cache_dir, steps=0, batches=0, timeout_s=900):
    """A job in 2 fresh processes with TORCHINDUCTOR_CACHE_DIR=cache_dir: rank 0's result."""
    import torch.multiprocessing as mp

    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    with tempfile.TemporaryDirectory() as scratch:
        out_path = os.path.join(scratch, "result.json")
        context = mp.start_processes(_rank_main, args=(_free_port(), job, argument, steps, batches, out_path),
                                     nprocs=WORLD_SIZE, join=False, start_method="spawn")
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


def measure(steps=20, batches=7):
    results, warm = {}, {}
    with tempfile.TemporaryDirectory() as caches:
        for index, variant in enumerate(VARIANTS):
            cache_dir = os.path.join(caches, str(index))
            results[variant] = run_job("first_step", variant, cache_dir)
            if variant in WARM_VARIANTS:
                warm[variant] = run_job("first_step", variant, cache_dir)
        rates = run_job("steady_state", list(VARIANTS), os.path.join(caches, "steady"), steps, batches)
    for variant, rate in rates.items():
        results[variant]["steps_per_s"] = rate
    eager_losses = results["eager DDP"]["losses"]
    for result in list(results.values()) + list(warm.values()):
        result["matches_eager"] = all(abs(a - b) <= 1e-4 * max(1.0, abs(a)) for a, b in
                                      zip(eager_losses, result["losses"]))
    return results, warm


def _cache_text(caches):
    return (f"{caches['fx_hit']} hit / {caches['fx_miss']} miss / {caches['fx_bypass']} bypass; "
            f"AOTAutograd: {caches['aot_hit']} / {caches['aot_miss']} / {caches['aot_bypass']}")


def report(results, warm, info, started, finished, steps, batches):
    eager_rate = results["eager DDP"]["steps_per_s"]
    lines = [
        "# DDP training, 2 gloo ranks on the CPU: eager, torch.compile and bytegraph",
        "",
        "Generated by `PYTHONPATH=. python -m benchmarks.distributed` (see its docstring for the method).",
        "",
        "## Machine",
        "",
        f"- CPU: {info['cpu']}, {info['cores']} cores; 2 ranks, 1 torch thread each",
        f"- Python {info['python']}, torch {info['torch']}",
        f"- Load average (1, 5, 15 min) before: {info['load_average']}, after: {load_average()}",
        f"- Run from {started} to {finished}",
        "",
        "## Setup",
        "",
        f"An MLP of {LAYERS} Linear({WIDTH}, {WIDTH}) layers with ReLU (4.0 MiB of fp32 parameters), batch "
        f"{BATCH} per rank, SGD; DDP with `bucket_cap_mb={BUCKET_CAP_MB}`; the compiled variants use inductor.",
        "",
        "- First step: the first training step, compilation included, the slower rank's; each variant in "
        "new processes with an empty inductor cache.",
        f"- Steps per second: all variants in the same 2 processes, after their first 3 steps, timed in "
        f"{batches} interleaved batches of {steps} steps (median, rank 0).",
        "- Pieces: the graphs the compiler was handed; under DDP both torch.compile and bytegraph split the "
        "forward at bucket boundaries (torch's DDPOptimizer), one piece per 1 MiB layer here.",
        "- Losses of the first 3 steps compared with eager DDP's (relative 1e-4).",
        "",
        "| variant | first step (s) | steps/s | vs eager DDP | pieces compiled | losses equal eager's |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for variant, result in results.items():
        lines.append(f"| {variant} | {result['first_step_s']:.2f} | {result['steps_per_s']:.1f} | "
                     f"{result['steps_per_s'] / eager_rate:.2f}x | {result['pieces']} | "
                     f"{'yes' if result['matches_eager'] else 'NO'} |")
    lines += [
        "",
        "## First step with inductor's caches warm",
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
        lines.append(f"| {variant} | {cold['first_step_s']:.2f} | {result['first_step_s']:.2f} | "
                     f"{_cache_text(cold['caches'])} | {_cache_text(result['caches'])} | "
                     f"{'yes' if result['matches_eager'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="steps per timed batch")
    parser.add_argument("--batches", type=int, default=7, help="timed batches (the median is reported)")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "distributed.md"))
    args = parser.parse_args(argv)
    info = machine_info()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    results, warm = measure(args.steps, args.batches)
    finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    text = report(results, warm, info, started, finished, args.steps, args.batches)
    with open(args.out, "w") as file:
        file.write(text)
    print(text)


if __name__ == "__main__":
    main()
