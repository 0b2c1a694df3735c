"""First calls in fresh processes: what a user waits for before the first result.

Three measurements, each (system, setting) in its own interpreter started by benchmarks.run:

- `result`: after `import torch` (untimed, both systems pay it alike), the time to the first
  result of a TransformerEncoder compiled with a callable backend (the graph's own forward):
  importing the compiler, tracing, the first call. Also records which of torch._dynamo's
  modules the process imported by then.
- `train`: five training steps (forward, backward, SGD step) of an MLP under "aot_eager" or
  "inductor", compile included, with an empty inductor cache.
- `warm`: the first call of a model (an MLP, a 2-layer TransformerEncoder, a 2-layer GPT-2 of
  transformers) under "inductor" in
  a process whose TORCHINDUCTOR_CACHE_DIR an earlier process filled (benchmarks.run runs a
  cold process, then warm ones, on one directory per system and model). bytegraph's warm
  processes run twice: with inductor's caches alone, and with the warm-start records the cold
  process wrote as well (BYTEGRAPH_WARM_START_DIR), which skip tracing.

This module imports only torch at the top: importing bytegraph (or anything of benchmarks.*
that does) is part of what `result` times.

    python -m benchmarks.first_call result|train|warm SYSTEM [BACKEND] --out result.json
"""

import argparse
import json
import os
import sys
import time

STEPS = 5


def _transformer_encoder():
    import torch
    from torch import nn

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, batch_first=True)
    model = nn.Sequential(nn.Embedding(256, 64), nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
                          nn.LayerNorm(64)).eval()
    return model, torch.randint(0, 256, (2, 16))


def _mlp():
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def _compile(system, model, backend):
    if system == "bytegraph":
        import bytegraph

        return bytegraph.compile(model, backend=backend)
    import torch

    return torch.compile(model, backend=backend)


def _graph_forward(gm, example_inputs):
    return gm.forward


def first_result(system):
    import torch

    model, ids = _transformer_encoder()
    with torch.no_grad():
        expected = model(ids)
    before = set(sys.modules)
    start = time.perf_counter()
    compiled = _compile(system, model, _graph_forward)
    with torch.no_grad():
        result = compiled(ids)
    seconds = time.perf_counter() - start
    dynamo = sorted(name for name in set(sys.modules) - before if name.startswith("torch._dynamo"))
    return {"seconds": seconds, "matches_eager": bool(torch.allclose(expected, result, atol=1e-5)),
            "dynamo_modules": len(dynamo)}


def _train(model, step_model, steps):
    import torch

    torch.manual_seed(1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for _ in range(steps):
        x, target = torch.randn(32, 64), torch.randint(0, 10, (32,))
        loss = torch.nn.functional.cross_entropy(step_model(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def training(system, backend):
    import torch._inductor.compile_fx  # noqa: F401  (import cost is not compile latency)

    reference = _mlp()
    expected = _train(reference, reference, STEPS)
    model = _mlp()
    start = time.perf_counter()
    losses = _train(model, _compile(system, model, backend), STEPS)
    seconds = time.perf_counter() - start
    same = all(abs(a - b) <= 1e-4 * max(1.0, abs(a)) for a, b in zip(expected, losses))
    return {"seconds": seconds, "steps": STEPS, "matches_eager": same}


def inductor_first_call(system, model_name):
    import torch
    import torch._inductor.compile_fx  # noqa: F401

    if model_name == "encoder":
        model, x = _transformer_encoder()
    elif model_name == "gpt2":
        from benchmarks.models import _gpt2

        torch.manual_seed(0)
        model, (x,), _ = _gpt2()
    else:
        model, x = _mlp().eval(), torch.randn(32, 64)
    with torch.no_grad():
        expected = model(x)
        compiled = _compile(system, model, "inductor")
        start = time.perf_counter()
        result = compiled(x)
        seconds = time.perf_counter() - start
    if model_name == "gpt2":
        expected, result = expected.last_hidden_state, result.last_hidden_state
    return {"seconds": seconds, "matches_eager": bool(torch.allclose(expected, result, atol=1e-4))}


# ---- the runner (in benchmarks.run's process) and the report ----------------------------

RESULT_REPEATS = 3
TRAIN_BACKENDS = ("aot_eager", "inductor")
GOAL_RESULT_RATIO = 0.25
GOAL_WARM_START_RATIO = 0.5
WARM_MODELS = ("mlp", "encoder", "gpt2")
# (system, state, environment): the processes run one after another on one inductor cache
# directory (and one warm-start directory) per system and model.
WARM_STATES = (("torch", "cold", {}), ("torch", "warm", {}),
               ("bytegraph", "cold", {"BYTEGRAPH_WARM_START_DIR": "{records}"}), ("bytegraph", "warm", {}),
               ("bytegraph", "warm start", {"BYTEGRAPH_WARM_START_DIR": "{records}"}))


def _fresh_process(job_args, env_extra, timeout, repo_root):
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bytegraph-bench-first-") as tmp:
        out = os.path.join(tmp, "result.json")
        env = dict(os.environ)
        env["PYTHONPATH"] = repo_root + os.pathsep + env.get("PYTHONPATH", "")
        env.update(env_extra)
        command = [sys.executable, "-m", "benchmarks.first_call", *job_args, "--out", out]
        try:
            proc = subprocess.run(command, env=env, cwd=repo_root, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout} s"}
        if proc.returncode != 0 or not os.path.exists(out):
            return {"error": (proc.stderr or f"exited with {proc.returncode}").strip().splitlines()[-1][:300]}
        with open(out) as f:
            return json.load(f)


def run_all(*, timeout, repo_root, inductor=True, log=print):
    """Every fresh-process measurement; the systems alternate so that load drifts hit both."""
    import tempfile

    results = {"result": {"bytegraph": [], "torch": []}, "train": [], "warm": []}
    for _ in range(RESULT_REPEATS):
        for system in ("torch", "bytegraph"):
            log(f"  first result, callable backend: {system}", flush=True)
            results["result"][system].append(_fresh_process(["result", system], {}, timeout, repo_root))
    for backend in TRAIN_BACKENDS if inductor else TRAIN_BACKENDS[:1]:
        for system in ("torch", "bytegraph"):
            log(f"  training loop, {STEPS} steps: {backend} / {system}", flush=True)
            with tempfile.TemporaryDirectory(prefix="bytegraph-bench-train-") as cache_dir:
                row = _fresh_process(["train", system, backend], {"TORCHINDUCTOR_CACHE_DIR": cache_dir},
                                     timeout, repo_root)
            results["train"].append(dict(row, system=system, backend=backend))
    if inductor:
        for model in WARM_MODELS:
            caches = {}
            for system, state, extra in WARM_STATES:
                if system not in caches:
                    caches[system] = tempfile.mkdtemp(prefix="bytegraph-bench-warm-")
                env = {"TORCHINDUCTOR_CACHE_DIR": os.path.join(caches[system], "inductor")}
                env.update({k: v.format(records=os.path.join(caches[system], "records")) for k, v in extra.items()})
                log(f"  inductor first call, {model}, {state}: {system}", flush=True)
                row = _fresh_process(["warm", system, model], env, timeout, repo_root)
                results["warm"].append(dict(row, system=system, cache=state, model=model))
            import shutil

            for directory in caches.values():
                shutil.rmtree(directory, ignore_errors=True)
    return results


def _median_seconds(rows):
    import statistics

    seconds = [row["seconds"] for row in rows if "seconds" in row]
    return statistics.median(seconds) if seconds else None


def _s(value):
    return "—" if value is None else f"{value:.2f}"


def _by(rows, **match):
    for row in rows:
        if all(row.get(k) == v for k, v in match.items()):
            return row
    return {}


def summary_lines(first):
    if not first:
        return []
    lines = []
    ours, theirs = _median_seconds(first["result"]["bytegraph"]), _median_seconds(first["result"]["torch"])
    if ours and theirs:
        dynamo = max((row.get("dynamo_modules", 0) for row in first["result"]["bytegraph"]), default=0)
        lines.append(f"- First result in a fresh process, callable backend: bytegraph {ours:.2f} s, torch.compile "
                     f"{theirs:.2f} s ({ours / theirs:.2f}x; goal at most {GOAL_RESULT_RATIO:g}x: "
                     f"{'met' if ours / theirs <= GOAL_RESULT_RATIO else 'missed'}); torch._dynamo modules "
                     f"loaded by bytegraph: {dynamo} (torch's fake tensors import them), not the package.")
    for backend in TRAIN_BACKENDS:
        a, b = _by(first["train"], system="bytegraph", backend=backend), _by(first["train"], system="torch", backend=backend)
        if "seconds" in a and "seconds" in b:
            lines.append(f"- {STEPS}-step training loop with {backend}, compile included: bytegraph {a['seconds']:.2f} s, "
                         f"torch.compile {b['seconds']:.2f} s ({'met' if a['seconds'] <= b['seconds'] else 'missed'}).")
    for model in WARM_MODELS:
        rows = {(system, state): _by(first["warm"], system=system, cache=state, model=model)
                for system, state, _ in WARM_STATES}
        if not all("seconds" in row for row in rows.values()):
            continue
        s = {key: row["seconds"] for key, row in rows.items()}
        ratio = s["bytegraph", "warm start"] / s["torch", "warm"]
        lines.append(f"- Inductor first call of the {model} in a second process: bytegraph {s['bytegraph', 'cold']:.2f} s "
                     f"cold, {s['bytegraph', 'warm']:.2f} s with inductor's caches warm, "
                     f"{s['bytegraph', 'warm start']:.2f} s from its warm-start records; torch.compile "
                     f"{s['torch', 'cold']:.2f} s cold, {s['torch', 'warm']:.2f} s warm ({ratio:.2f}x; goal at most "
                     f"{GOAL_WARM_START_RATIO:g}x: {'met' if ratio <= GOAL_WARM_START_RATIO else 'missed'}).")
    return lines


def report_section(results):
    first = results.get("first_call")
    if not first:
        return []
    lines = [
        "## 6. First calls in fresh processes",
        "",
        "Each row is a new interpreter (`benchmarks/first_call.py`): `import torch` before the clock, then "
        "importing the compiler, compiling and calling. First result: a 2-layer TransformerEncoder with a "
        f"callable backend, median of {RESULT_REPEATS} processes per system. Training: {STEPS} steps of an "
        "MLP (forward, backward, SGD), compile included, empty inductor cache. Warm cache: the MLP's first "
        "inductor call (and a TransformerEncoder's, a GPT-2's) in a second process on the cache directory the first one "
        "filled; bytegraph's also with the warm-start records the first process wrote.",
        "",
        "| measurement | bytegraph (s) | torch.compile (s) | bytegraph / torch | matches eager |",
        "|---|---:|---:|---:|---|",
    ]

    def row(label, ours, theirs, rows):
        ratio = f"{ours / theirs:.2f}x" if ours and theirs else "—"
        errors = [r.get("error") for r in rows if r.get("error")]
        matches = "; ".join(errors)[:120] if errors else ("yes" if all(r.get("matches_eager") for r in rows) else "NO")
        lines.append(f"| {label} | {_s(ours)} | {_s(theirs)} | {ratio} | {matches} |")

    result = first["result"]
    row("first result, callable backend", _median_seconds(result["bytegraph"]), _median_seconds(result["torch"]),
        result["bytegraph"] + result["torch"])
    for backend in TRAIN_BACKENDS:
        a, b = _by(first["train"], system="bytegraph", backend=backend), _by(first["train"], system="torch", backend=backend)
        if a or b:
            row(f"{STEPS}-step training loop, {backend}", a.get("seconds"), b.get("seconds"), [a, b])
    for model in WARM_MODELS:
        torch_warm = _by(first["warm"], system="torch", cache="warm", model=model)
        for state in ("cold", "warm", "warm start"):
            a = _by(first["warm"], system="bytegraph", cache=state, model=model)
            b = _by(first["warm"], system="torch", cache=state, model=model) or torch_warm
            if a or b:
                label = {"cold": "cold caches", "warm": "inductor's caches warm",
                         "warm start": "warm-start records (torch: caches warm)"}[state]
                row(f"inductor first call, {model}, {label}", a.get("seconds"), b.get("seconds"), [a, b])
    return lines + [""]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.first_call")
    parser.add_argument("kind", choices=["result", "train", "warm"])
    parser.add_argument("system", choices=["bytegraph", "torch"])
    parser.add_argument("backend", nargs="?", default="inductor",
                        help="train: the backend; warm: the model (mlp or encoder)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(int(os.environ.get("BYTEGRAPH_BENCH_THREADS", "1")))
    if args.kind == "result":
        value = first_result(args.system)
    elif args.kind == "train":
        value = training(args.system, args.backend)
    else:
        value = inductor_first_call(args.system, args.backend if args.backend in WARM_MODELS else "mlp")
    with open(args.out, "w") as f:
        json.dump(value, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
