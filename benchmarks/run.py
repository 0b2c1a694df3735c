"""Runs every benchmark, bytegraph and torch.compile side by side, and writes the report.

    python -m benchmarks.run                     # everything (make bench)
    python -m benchmarks.run --smoke             # tiny repetition counts, no inductor
    python -m benchmarks.run --models Net MLP --no-inductor --out /tmp/bench
    python -m benchmarks.run --from-json benchmarks/results/latest.json   # re-render only
    python -m benchmarks.run --cache-only --into benchmarks/results/latest.json   # cache hits, every Python
    python -m benchmarks.zoo --models gpt2 --mode eval                    # the model zoo alone

Each job runs in its own process (benchmarks.worker): a crash of bytegraph's core on one
model is recorded in the table instead of ending the run, and each inductor measurement
starts with empty compile caches. Writes OUT/latest.md, OUT/latest.json and OUT/latest.png,
and from the model zoo (benchmarks.zoo) OUT/zoo.json, OUT/zoo.md and OUT/ZOO_TRIAGE.md.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from benchmarks import dynamic_shapes, first_call, inductor_zoo, models, report, timing, zoo

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_INDUCTOR_MODELS = ["Net", "MLP", "CNN", "TransformerEncoder"]
DEFAULT_PROFILE_MODELS = ["MLP", "CNN"]


def _signal_name(rc):
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def run_worker(job_args, *, timeout, env_extra=None, log=print, python=None):
    """Runs `python -m benchmarks.worker ...` (this interpreter unless `python` names another);
    returns its results with the exit recorded."""
    with tempfile.TemporaryDirectory(prefix="bytegraph-bench-") as tmp:
        out = os.path.join(tmp, "result.json")
        env = dict(os.environ)
        env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
        env.update(env_extra or {})
        command = [python or sys.executable, "-X", "faulthandler", "-m", "benchmarks.worker", "--out", out, *job_args]
        start = time.perf_counter()
        try:
            proc = subprocess.run(command, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)
            rc, stderr = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as expired:
            rc, stderr = "timeout", (expired.stderr or b"").decode(errors="replace") if expired.stderr else ""
        results = {}
        if os.path.exists(out):
            with open(out) as f:
                results = json.load(f)
    results["wall_s"] = time.perf_counter() - start
    if rc != 0:
        unfinished = [key[: -len("_started")] for key in results if key.endswith("_started")
                      and key[: -len("_started")] not in results]
        how = f"timed out after {timeout} s" if rc == "timeout" else (
            f"crashed ({_signal_name(rc)})" if isinstance(rc, int) and rc < 0 else f"exited with {rc}")
        fatal = stderr.find("Fatal Python error")  # faulthandler's report of a crash
        excerpt = stderr[fatal:fatal + 3000] if fatal >= 0 else stderr[-1500:]
        results["crash"] = {"how": how, "stage": unfinished[0] if unfinished else None, "stderr_tail": excerpt}
        log(f"    {' '.join(job_args)}: {how} in stage {results['crash']['stage']}")
    return results


def other_interpreters():
    """[(version, python)] of the other CPythons this checkout is built for: the 3.12 and 3.13
    virtual environments that `make build PYTHON=python3.X` makes, with their extension built."""
    import glob

    found = []
    for version in ("3.12", "3.13"):
        python = os.path.join(REPO_ROOT, f".venv-{version}", "bin", "python")
        tag = version.replace(".", "")
        if os.path.exists(python) and glob.glob(os.path.join(REPO_ROOT, "bytegraph", f"_C.cpython-{tag}-*.so")):
            found.append((version, python))
    return found


def run_cache_by_python(args, *, include_this=False):
    """The cache-hit job under each other interpreter (and this one, with `include_this`)."""
    started, rows = time.strftime("%Y-%m-%d %H:%M:%S %Z"), []
    this = (f"{sys.version_info.major}.{sys.version_info.minor}", sys.executable)
    for version, python in ([this] if include_this else []) + other_interpreters():
        print(f"  cache-hit overhead: Python {version}", flush=True)
        row = run_worker(["cache", "--calls", str(args.cache_calls), "--batches", str(args.cache_batches)],
                         timeout=args.timeout, python=python)
        rows.append(dict(row, python=version))
    return {"started": started, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "rows": rows}


def run_dynamic(args, results):
    """The dynamic-shape sweeps (benchmarks.dynamic_shapes), one process per sweep."""
    backends = [b for b in args.dynamic_backends if not (b == "inductor" and args.no_inductor)]
    for name in args.dynamic_models:
        if name == "GPT-2" and (args.no_transformers or not models.have_transformers()):
            continue
        for axis in dynamic_shapes.AXES:
            if not dynamic_shapes.applicable(name, axis):
                continue
            for backend in backends:
                if backend == "inductor" and name not in args.dynamic_inductor_models:
                    continue
                for dynamic in ("auto", "true"):
                    for system in ("torch", "bytegraph"):
                        print(f"  dynamic shapes: {name} / {axis} / {backend} / dynamic={dynamic} / {system}",
                              flush=True)
                        with tempfile.TemporaryDirectory(prefix="bytegraph-bench-dynamic-") as cache_dir:
                            row = run_worker(["dynamic", name, axis, system, backend, dynamic], timeout=args.timeout,
                                             env_extra={"TORCHINDUCTOR_CACHE_DIR": cache_dir})
                        results["dynamic"].append(row)
    print("  dynamic shapes: cache hits on dynamic entries", flush=True)
    results["dynamic_hits"] = run_worker(["dynamic-hits"], timeout=args.timeout)


def _value_or_none(row):
    return [(r["tensors"], round(r["bytegraph_overhead_s"] * 1e6, 3)) for r in row.get("cache_hit") or []
            if isinstance(r, dict)] or row.get("crash") or row.get("cache_hit")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", help="model names (default: all)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions per measurement")
    parser.add_argument("--no-transformers", action="store_true", help="skip the transformers models")
    parser.add_argument("--no-inductor", action="store_true", help="skip the inductor benchmark")
    parser.add_argument("--no-zoo", action="store_true", help="skip the model zoo (benchmarks.zoo)")
    parser.add_argument("--zoo-models", nargs="*", default=None, help="zoo models (default: all)")
    parser.add_argument("--inductor-models", nargs="*", default=DEFAULT_INDUCTOR_MODELS)
    parser.add_argument("--no-inductor-zoo", action="store_true",
                        help="skip inductor on the zoo's whole models (benchmarks.inductor_zoo)")
    parser.add_argument("--inductor-zoo-models", nargs="*", default=inductor_zoo.DEFAULT_MODELS)
    parser.add_argument("--profile-models", nargs="*", default=None,
                        help="models whose tracing path is profiled with cProfile (default: MLP CNN; "
                        "none with --smoke)")
    parser.add_argument("--no-dynamic", action="store_true", help="skip the dynamic-shape sweeps")
    parser.add_argument("--no-first-calls", action="store_true",
                        help="skip the fresh-process first calls (benchmarks.first_call)")
    parser.add_argument("--dynamic-models", nargs="*", default=dynamic_shapes.MODELS,
                        help="models of the dynamic-shape sweeps")
    parser.add_argument("--dynamic-backends", nargs="*", default=["eager", "inductor"],
                        help="backends of the dynamic-shape sweeps (inductor is skipped with --no-inductor)")
    parser.add_argument("--dynamic-inductor-models", nargs="*", default=dynamic_shapes.INDUCTOR_MODELS,
                        help="models swept with inductor too (each graph costs inductor tens of seconds)")
    parser.add_argument("--cache-calls", type=int, default=5000, help="calls per timed batch (cache hits)")
    parser.add_argument("--cache-batches", type=int, default=9)
    parser.add_argument("--cache-only", action="store_true",
                        help="measure the cache-hit overhead alone, under every interpreter this checkout is built "
                        "for; with --into, put the rows into a saved latest.json and render its report again")
    parser.add_argument("--into", metavar="LATEST_JSON", help="see --cache-only")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny repetition counts and no inductor: checks that everything runs")
    parser.add_argument("--timeout", type=int, default=900, help="seconds allowed to one job")
    parser.add_argument("--out", default=RESULTS_DIR, help="where latest.md/json/png go")
    parser.add_argument("--from-json", metavar="PATH",
                        help="measure nothing: render the report of a saved latest.json again")
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeats = min(args.repeats, 1)
        args.cache_calls, args.cache_batches = 200, 3
        args.no_inductor = True
        args.no_dynamic = True
        args.no_zoo = True
        args.no_first_calls = True
        if args.profile_models is None:
            args.profile_models = []
    if args.profile_models is None:
        args.profile_models = DEFAULT_PROFILE_MODELS
    return args


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)
        for path in report.write(results, args.out):
            print(f"wrote {path}")
        if results.get("zoo"):
            # The zoo ran last: the run's end is the zoo's.
            zoo.write(results["zoo"]["rows"], args.out, started=results["zoo"].get("started"),
                      finished=results["zoo"].get("finished") or results.get("finished"))
        return 0
    if args.cache_only:
        measured = run_cache_by_python(args, include_this=True)
        print(json.dumps([[row["python"], _value_or_none(row)] for row in measured["rows"]], default=str))
        if args.into:
            with open(args.into) as f:
                results = json.load(f)
            results["cache_by_python"] = measured
            for path in report.write(results, os.path.dirname(os.path.abspath(args.into))):
                print(f"wrote {path}")
        return 0
    selected = models.select(include_transformers=not args.no_transformers, names=args.models)
    names = {m.name for m in selected}
    results = {
        "machine": timing.machine_info(),
        "settings": {"repeats": args.repeats, "cache_calls": args.cache_calls, "cache_batches": args.cache_batches,
                     "smoke": args.smoke},
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "models": [],
        "inductor": [],
        "profiles": [],
        "dynamic": [],
    }
    print(f"benchmarks on {results['machine']['cpu']} ({results['machine']['cores']} cores), "
          f"load {results['machine']['load_average']}")
    for model in selected:
        print(f"  tracing/capture: {model.name}", flush=True)
        results["models"].append(run_worker(["model", model.name, "--repeats", str(args.repeats)],
                                            timeout=args.timeout))
    print("  cache-hit overhead", flush=True)
    results["cache"] = run_worker(["cache", "--calls", str(args.cache_calls), "--batches", str(args.cache_batches)],
                                  timeout=args.timeout)
    if not args.smoke:
        results["cache_by_python"] = run_cache_by_python(args)
    for name in [n for n in args.profile_models if n in names]:
        print(f"  profile of the tracing path: {name}", flush=True)
        results["profiles"].append(run_worker(["profile", name], timeout=args.timeout))
    if not args.no_inductor:
        for name in [n for n in args.inductor_models if n in names]:
            for system in ("torch", "bytegraph"):
                print(f"  inductor: {name} / {system}", flush=True)
                with tempfile.TemporaryDirectory(prefix="bytegraph-bench-inductor-") as cache_dir:
                    row = run_worker(["inductor", name, system], timeout=args.timeout,
                                     env_extra={"TORCHINDUCTOR_CACHE_DIR": cache_dir})
                row["system"] = system
                results["inductor"].append(row)
    if not (args.no_inductor or args.no_inductor_zoo or args.no_transformers) and models.have_transformers():
        results["inductor_zoo"] = inductor_zoo.run_all(args.inductor_zoo_models, timeout=args.timeout)
    if not args.no_first_calls:
        results["first_call"] = first_call.run_all(timeout=args.timeout, repo_root=REPO_ROOT,
                                                   inductor=not args.no_inductor)
    if not args.no_dynamic:
        run_dynamic(args, results)
    if not args.no_zoo and not args.no_transformers and models.have_transformers():
        started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        rows = zoo.run_zoo(args.zoo_models, timeout=args.timeout)
        results["zoo"] = {"started": started, "rows": rows}
        for path in zoo.write(rows, args.out, started=started):
            print(f"wrote {path}")
    results["machine"]["load_average_after"] = timing.load_average()
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    paths = report.write(results, args.out)
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
