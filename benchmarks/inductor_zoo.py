"""Inductor on the zoo's whole models: compile time and steady state, per model, in inference
and in a training step, bytegraph and torch.compile side by side.

    python -m benchmarks.inductor_zoo                              # the default models, both modes
    python -m benchmarks.inductor_zoo --models gpt2 vit --modes train
    python -m benchmarks.inductor_zoo --into benchmarks/results/latest.json   # add to a bench run's report

One child process per (model, mode) (`benchmarks.worker inductor-zoo NAME MODE`), with an
empty TORCHINDUCTOR_CACHE_DIR. In it, before any clock starts, both systems compile one
trivial function with inductor: the per-process costs (inductor's imports, its probe of the
CPU's vector ISA) would otherwise fall on whichever system goes first. Inductor's caches are
off (`force_disable_caches`), so neither system reuses a kernel the other compiled. Then each
system, in an order that alternates from job to job (what is left warm in the process after
the first compile helps the second), compiles its own deep copy of the model (`backend="inductor"`, as users write it):
the first step is timed as the compile time (eval: the forward under `no_grad`; train: the
forward, a loss made from every floating output, and the backward, whose graph inductor
compiles on first use). Outputs (and gradients in training) are compared with eager mode's.
Steady state: eager, torch.compile and bytegraph steps timed in interleaved batches in the
same process, the median over batches of the mean time per step: on a shared machine, load
changes between processes are larger than the differences measured.
"""

import argparse
import copy
import os
import sys
import time

import torch

from benchmarks import model_step, timing

DEFAULT_MODELS = ["gpt2", "llama", "bert", "t5", "vit", "resnet"]
MODES = ("eval", "train")
# Inductor reorders and fuses float arithmetic: a few ulps of float32 per op, more over a
# backward pass through two transformer layers.
TOLERANCES = {"eval": (1e-3, 1e-4), "train": (1e-2, 1e-3)}  # (rtol, atol)


class _GraphCount:
    """Counts the graphs handed to inductor's compile_fx (both systems call it by module
    attribute); AOTAutograd's forward and backward graphs are not counted separately."""

    def __init__(self):
        import torch._inductor.compile_fx as compile_fx_module

        self.module, self.original, self.count = compile_fx_module, compile_fx_module.compile_fx, 0

        def counting(*args, **kwargs):
            self.count += 1
            return self.original(*args, **kwargs)

        compile_fx_module.compile_fx = counting

    def close(self):
        self.module.compile_fx = self.original


def _compile(system, fn):
    if system == "bytegraph":
        import bytegraph

        return bytegraph.compile(fn, backend="inductor")
    return torch.compile(fn, backend="inductor")


def _warm_up():
    """Both systems compile a trivial function: what each process pays once is paid here."""
    import torch._inductor.compile_fx  # noqa: F401

    x = torch.randn(8)
    for system in ("torch", "bytegraph"):
        _compile(system, lambda t: (t * 2).sin())(x)


def _step(call, module, mode, args, kwargs):
    """One step; returns (outputs, grads) flattened for the comparison with eager mode."""
    for parameter in module.parameters():
        parameter.grad = None
    if mode == "eval":
        with torch.no_grad():
            output = call(*args, **kwargs)
        return model_step.flatten(output), []
    output = call(*args, **kwargs)
    model_step.loss_of(output).backward()
    return model_step.flatten(output), [(name, p.grad) for name, p in module.named_parameters()]


def _largest_difference(expected, actual, mode):
    """(max abs difference over outputs and grads, whether all are within the tolerance)."""
    rtol, atol = TOLERANCES[mode]
    worst, close = 0.0, True
    for (_, a), (_, b) in zip(expected[0] + expected[1], actual[0] + actual[1]):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.is_floating_point():
            worst = max(worst, (a.detach() - b.detach()).abs().max().item() if a.numel() else 0.0)
            close = close and torch.allclose(a.detach(), b.detach(), rtol=rtol, atol=atol, equal_nan=True)
        elif (a is None) != (b is None):
            close = False
    return worst, close


def measure(name, mode, *, first="torch", calls=10, batches=9, stage=None):
    """{"model", "mode", "eager_s", SYSTEM: {"compile_s", "graphs", "max_difference",
    "matches_eager"}, "steady": {SYSTEM_s}} for one zoo model in one mode."""
    from benchmarks import zoo

    stage = stage or (lambda key, value: None)
    torch._inductor.config.force_disable_caches = True
    _warm_up()
    (entry,) = zoo.select([name])
    torch.manual_seed(0)
    module, args, kwargs = entry.make()
    module.train(mode == "train")
    order = ("torch", "bytegraph") if first == "torch" else ("bytegraph", "torch")
    row = {"model": entry.name, "family": entry.family, "mode": mode, "first": order[0]}
    stage("model", dict(row))
    expected = _step(module, module, mode, args, kwargs)
    callers = {"eager": (module, module)}
    for system in order:
        stage(f"{system}_started", True)
        own = copy.deepcopy(module)
        compiled = _compile(system, own)
        counter = _GraphCount()
        try:
            start = timing.clock()
            got = _step(compiled, own, mode, args, kwargs)
            seconds = timing.clock() - start
        finally:
            counter.close()
        worst, close = _largest_difference(expected, got, mode)
        row[system] = {"compile_s": seconds, "graphs": counter.count, "max_difference": worst,
                       "matches_eager": close}
        stage(system, row[system])
        callers[system] = (compiled, own)
    times = {key: [] for key in callers}
    for _ in range(batches):
        for key, (call, owner) in callers.items():
            start = timing.clock()
            for _ in range(calls):
                _step(call, owner, mode, args, kwargs)
            times[key].append((timing.clock() - start) / calls)
    row["steady"] = {f"{key}_s": timing.median(values) for key, values in times.items()}
    stage("steady", row["steady"])
    return row


def run_all(names=None, modes=MODES, *, timeout=900, log=print):
    """Every (model, mode) in its own worker process: {"started", "finished", "rows"}."""
    import tempfile

    from benchmarks import run

    started, rows = time.strftime("%Y-%m-%d %H:%M:%S %Z"), []
    for i, name in enumerate(names or DEFAULT_MODELS):
        for j, mode in enumerate(modes):
            first = ("torch", "bytegraph")[(i + j) % 2]  # each mode gets both orders
            log(f"  inductor on the zoo: {name} / {mode} ({first} first)", flush=True)
            with tempfile.TemporaryDirectory(prefix="bytegraph-bench-inductor-zoo-") as cache_dir:
                saved = run.run_worker(["inductor-zoo", name, mode, "--first", first], timeout=timeout,
                                       env_extra={"TORCHINDUCTOR_CACHE_DIR": cache_dir}, log=log)
            row = dict(saved.get("model") or {"model": name, "mode": mode})
            for key in ("torch", "bytegraph", "steady", "crash"):
                if key in saved:
                    row[key] = saved[key]
            row["wall_s"] = saved.get("wall_s")
            rows.append(row)
    return {"started": started, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "rows": rows}


# ---- the report ---------------------------------------------------------------------------------

# Steady-state ratios within this of parity are noise on a shared 2-core machine.
NOISE = 1.05


def _steady_ratio(row):
    steady = row.get("steady") or {}
    if steady.get("bytegraph_s") and steady.get("torch_s"):
        return steady["bytegraph_s"] / steady["torch_s"]
    return None


def _rows(results):
    return (results.get("inductor_zoo") or {}).get("rows") or []


def summary_lines(results):
    rows = _rows(results)
    lines = []
    for mode in MODES:
        ratios = [(row["model"], _steady_ratio(row)) for row in rows if row.get("mode") == mode]
        measured = [(name, r) for name, r in ratios if r is not None]
        if not measured:
            continue
        ahead = sum(r <= NOISE for _, r in measured)
        compile_ratios = [row["bytegraph"]["compile_s"] / row["torch"]["compile_s"] for row in rows
                          if row.get("mode") == mode and "compile_s" in (row.get("bytegraph") or {})
                          and "compile_s" in (row.get("torch") or {})]
        compile_text = (f"; compile time {min(compile_ratios):.2f}x to {max(compile_ratios):.2f}x torch.compile's"
                        if compile_ratios else "")
        lines.append(
            f"- Inductor on the zoo's whole models, {'inference' if mode == 'eval' else 'training step'}, "
            f"steady state bytegraph / torch.compile: {', '.join(f'{n} {r:.2f}x' for n, r in measured)} "
            f"({ahead} of {len(measured)} at most {NOISE:.2f}x: {'met' if ahead == len(measured) else '**missed**'}; "
            f"not measured: {', '.join(n for n, r in ratios if r is None) or 'none'}){compile_text}.")
    return lines


def _system_cells(summary):
    if not isinstance(summary, dict) or "compile_s" not in summary:
        return ["—", "—", "—"]
    return [f"{summary['compile_s']:.1f}", str(summary["graphs"]),
            "yes" if summary["matches_eager"] else f"NO ({summary['max_difference']:.2g})"]


def inductor_zoo_table(rows):
    lines = ["| model | mode | eager (ms) | torch.compile (ms) | bytegraph (ms) | bytegraph / torch | "
             "torch compile (s) | torch graphs | torch matches eager | bytegraph compile (s) | bytegraph graphs | "
             "bytegraph matches eager |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"]
    for row in rows:
        steady = row.get("steady") or {}
        ratio = _steady_ratio(row)
        cells = [row["model"], row.get("mode", ""),
                 *(f"{steady[key] * 1e3:.2f}" if key in steady else "—" for key in ("eager_s", "torch_s", "bytegraph_s")),
                 "—" if ratio is None else f"{ratio:.2f}x",
                 *_system_cells(row.get("torch")), *_system_cells(row.get("bytegraph"))]
        if row.get("crash"):
            cells[-1] += f"; {row['crash']['how']} in {row['crash'].get('stage')}"
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def report_section(results):
    measured = results.get("inductor_zoo")
    if not measured:
        return []
    return [
        "## 4b. Inductor on the zoo's whole models: inference and training steps",
        "",
        "`benchmarks/inductor_zoo.py`: one process per (model, mode); both systems compile a trivial function "
        "first (per-process costs), inductor's caches off; each system (which one first alternates from row to row) compiles its own copy of the model with "
        "`backend=\"inductor\"`; compile time is the first step (training: forward, loss and backward); "
        "steady state is eager, torch.compile and bytegraph steps timed in interleaved batches (median of "
        "batch means). Graphs: graphs handed to inductor's `compile_fx`. Matches eager: outputs (and "
        "gradients) within rtol/atol 1e-3/1e-4 (inference) or 1e-2/1e-3 (training).",
        "",
        f"Run from {measured['started']} to {measured['finished']}.",
        "",
        *inductor_zoo_table(measured["rows"]),
        "",
    ]


def main(argv=None):
    import json

    parser = argparse.ArgumentParser(prog="python -m benchmarks.inductor_zoo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", default=DEFAULT_MODELS)
    parser.add_argument("--modes", nargs="*", default=list(MODES), choices=MODES)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--into", metavar="LATEST_JSON",
                        help="put the rows into a saved `make bench` results file and render its report again")
    args = parser.parse_args(argv)
    measured = run_all(args.models, args.modes, timeout=args.timeout)
    print(f"\nload {timing.load_average()}")
    print("\n".join(inductor_zoo_table(measured["rows"])))
    print("\n".join(summary_lines({"inductor_zoo": measured})))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(measured, f, indent=1, default=str)
    if args.into:
        from benchmarks import report

        with open(args.into) as f:
            results = json.load(f)
        results["inductor_zoo"] = measured
        for path in report.write(results, os.path.dirname(os.path.abspath(args.into))):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    sys.exit(main())
