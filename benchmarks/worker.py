"""One benchmark job in its own process; benchmarks.run starts these.

    python -m benchmarks.worker model NAME --repeats R --out result.json
    python -m benchmarks.worker cache --calls N --batches B --out result.json
    python -m benchmarks.worker inductor NAME SYSTEM --out result.json
    python -m benchmarks.worker profile NAME --out result.json
    python -m benchmarks.worker dynamic NAME AXIS SYSTEM BACKEND DYNAMIC --out result.json
    python -m benchmarks.worker dynamic-hits --out result.json
    python -m benchmarks.worker inductor-zoo NAME MODE [--first torch|bytegraph] --out result.json
    python -m benchmarks.worker zoo NAME MODE [--systems torch,bytegraph] --out result.json

A job writes its JSON after every stage, torch.compile's stages first: if bytegraph crashes
the process (a bug in its C++ core), what was measured before survives and the parent
records the crash against bytegraph.
"""

import argparse
import json
import os
import sys
import traceback
import warnings


class Results(dict):
    """A dict that rewrites its JSON file whenever a stage finishes."""

    def __init__(self, path):
        super().__init__()
        self.path = path

    def stage(self, key, value):
        self[key] = value
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self, f, indent=1, default=str)
        os.replace(tmp, self.path)


def _error_text(error):
    text = f"{type(error).__name__}: {error}".strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def _run_stage(results, key, fn):
    """Runs one stage; records its value, or its error instead of stopping the job."""
    results.stage(f"{key}_started", True)
    try:
        value = fn()
    except Exception as error:  # a benchmark records failures, it does not stop at them
        results.stage(key, {"error": _error_text(error), "traceback": traceback.format_exc()[-2000:]})
        return None
    results.stage(key, value)
    return value


def model_job(name, repeats, results):
    from benchmarks import capture, fake_floor, models, tracing

    (model,) = models.select(names=[name])
    fn, args, kwargs = model.make()
    results.stage("model", {"name": model.name, "group": model.group, "description": model.description})
    results.stage("eager_s", tracing.eager_seconds(fn, args, kwargs))

    _run_stage(results, "torch_capture", lambda: capture.torch_capture(fn, args, kwargs))
    _run_stage(results, "torch_cold_s", lambda: tracing.torch_cold_call_seconds(fn, args, kwargs, repeats))

    _run_stage(results, "bytegraph_capture", lambda: capture.bytegraph_capture(fn, args, kwargs))
    _run_stage(results, "bytegraph_cold_s", lambda: tracing.bytegraph_cold_call_seconds(fn, args, kwargs, repeats))

    def per_op():
        from bytegraph import _C

        try:
            trace_s, result = tracing.trace_only_seconds(fn, args, kwargs, repeats)
        except _C.Unsupported as error:
            return {"break": getattr(error, "kind", "unsupported")}
        gm = result.graph_module
        fresh, warm = fake_floor.fake_floor_seconds(gm, list(result.example_inputs), repeats)
        return {"trace_s": trace_s, "ops": fake_floor.op_count(gm), "fake_floor_s": fresh, "warm_floor_s": warm}

    _run_stage(results, "per_op", per_op)


def cache_job(calls, batches, results):
    from benchmarks import cache_hit

    _run_stage(results, "cache_hit", lambda: cache_hit.measure(calls=calls, batches=batches))


def inductor_job(name, system, results):
    from benchmarks import inductor, models

    (model,) = models.select(names=[name])
    fn, args, kwargs = model.make()
    results.stage("model", {"name": model.name, "group": model.group})
    _run_stage(results, "inductor", lambda: inductor.measure(system, fn, args, kwargs))


def profile_job(name, results):
    from benchmarks import models, profile_trace

    (model,) = models.select(names=[name])
    fn, args, kwargs = model.make()
    results.stage("model", {"name": model.name, "group": model.group})
    _run_stage(results, "profile", lambda: profile_trace.profile_trace(fn, args, kwargs))


def dynamic_job(name, axis, system, backend, dynamic, results):
    from benchmarks import dynamic_shapes

    setting = {"auto": None, "true": True}[dynamic]
    results.stage("job", [name, axis, system, backend, dynamic])
    _run_stage(results, "sweep", lambda: dynamic_shapes.sweep(name, axis, system, backend, setting))


def dynamic_hits_job(results):
    from benchmarks import dynamic_shapes

    _run_stage(results, "hit_cost", dynamic_shapes.hit_cost)


def inductor_zoo_job(name, mode, first, results):
    from benchmarks import inductor_zoo

    inductor_zoo.measure(name, mode, first=first, stage=results.stage)


def zoo_job(name, mode, systems, results):
    from benchmarks import zoo

    zoo.measure(name, mode, systems=systems, stage=results.stage)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.worker")
    parser.add_argument("--out", required=True)
    jobs = parser.add_subparsers(dest="job", required=True)
    model = jobs.add_parser("model")
    model.add_argument("name")
    model.add_argument("--repeats", type=int, default=5)
    cache = jobs.add_parser("cache")
    cache.add_argument("--calls", type=int, default=2000)
    cache.add_argument("--batches", type=int, default=7)
    ind = jobs.add_parser("inductor")
    ind.add_argument("name")
    ind.add_argument("system", choices=["bytegraph", "torch"])
    prof = jobs.add_parser("profile")
    prof.add_argument("name")
    dyn = jobs.add_parser("dynamic")
    dyn.add_argument("name")
    dyn.add_argument("axis", choices=["batch", "sequence"])
    dyn.add_argument("system", choices=["bytegraph", "torch"])
    dyn.add_argument("backend", choices=["eager", "inductor"])
    dyn.add_argument("dynamic", choices=["auto", "true"])
    jobs.add_parser("dynamic-hits")
    ind_zoo = jobs.add_parser("inductor-zoo")
    ind_zoo.add_argument("name")
    ind_zoo.add_argument("mode", choices=["eval", "train"])
    ind_zoo.add_argument("--first", choices=["torch", "bytegraph"], default="torch")
    zoo = jobs.add_parser("zoo")
    zoo.add_argument("name")
    zoo.add_argument("mode", choices=["eval", "train", "generate"])
    zoo.add_argument("--systems", default="torch,bytegraph")
    args = parser.parse_args(argv)

    warnings.filterwarnings("ignore")
    import torch

    torch.manual_seed(0)
    # One intra-op thread: on a small shared machine, OpenMP thread wake-ups and waits are
    # the largest noise in millisecond timings; both systems run under the same setting.
    torch.set_num_threads(int(os.environ.get("BYTEGRAPH_BENCH_THREADS", "1")))
    results = Results(args.out)
    results.stage("pid", os.getpid())
    if args.job == "model":
        model_job(args.name, args.repeats, results)
    elif args.job == "cache":
        cache_job(args.calls, args.batches, results)
    elif args.job == "profile":
        profile_job(args.name, results)
    elif args.job == "dynamic":
        dynamic_job(args.name, args.axis, args.system, args.backend, args.dynamic, results)
    elif args.job == "dynamic-hits":
        dynamic_hits_job(results)
    elif args.job == "inductor-zoo":
        inductor_zoo_job(args.name, args.mode, args.first, results)
    elif args.job == "zoo":
        zoo_job(args.name, args.mode, tuple(s for s in args.systems.split(",") if s), results)
    else:
        inductor_job(args.name, args.system, results)
    results.stage("done", True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
