"""How much of the model zoo a warm start serves from its records.

For each zoo model (inference, under no_grad): a first run compiles it with "eager" while
warm-start records are written; then, as a new process would start (bytegraph.reset(), a
new instance of the model built from the same seed), a second run compiles the new instance
and calls it. Reported per model: the frames the first run traced and recorded, the entries
the second run installed from the records and the frames it still traced, and whether both
runs' outputs equal eager mode's.

    python -m benchmarks.warm_start [--models gpt2,bert] [--out benchmarks/results]
"""

import argparse
import os
import sys
import tempfile
import time

import torch

import bytegraph
from bytegraph import _compile_metrics, _warm_start
from benchmarks import zoo


def _traced():
    return sum(1 for record in _compile_metrics.records() if record.phases["tracing"] > 0)


def _run(entry):
    torch.manual_seed(0)
    module, args, kwargs = entry.make()
    module.eval()
    with torch.no_grad():
        expected = module(*args, **kwargs)
        got = bytegraph.compile(module, backend="eager")(*args, **kwargs)
    return _same(expected, got)


def _same(expected, got):
    want, have = torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(got)
    if len(want) != len(have):
        return False
    for a, b in zip(want, have):
        if isinstance(a, torch.Tensor):
            if not isinstance(b, torch.Tensor) or a.shape != b.shape or not torch.allclose(a, b, atol=1e-5):
                return False
        elif a != b:
            return False
    return True


def measure(entry, directory):
    bytegraph.reset()
    stats = _warm_start.stats
    stats.__init__()
    with bytegraph.config.patch(warm_start_dir=directory):
        start = time.perf_counter()
        first_ok = _run(entry)
        cold_seconds = time.perf_counter() - start
        row = {"model": entry.name, "traced": _traced(), "written": stats.written, "not_written": stats.not_written}
        bytegraph.reset()
        start = time.perf_counter()
        second_ok = _run(entry)
        row.update(warm_seconds=time.perf_counter() - start, cold_seconds=cold_seconds, loaded=stats.loaded,
                   traced_again=_traced(), matches_eager=first_ok and second_ok)
    bytegraph.reset()
    return row


def table(rows):
    lines = ["| model | frames traced | recorded | installed in the second run | traced again | "
             "first call cold / warm (s) | matches eager |", "|---|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['model']} | — | — | — | — | — | error: {row['error'][:80]} |")
            continue
        lines.append(f"| {row['model']} | {row['traced']} | {row['written']} | {row['loaded']} | "
                     f"{row['traced_again']} | {row['cold_seconds']:.2f} / {row['warm_seconds']:.2f} | "
                     f"{'yes' if row['matches_eager'] else 'NO'} |")
    whole = [r for r in rows if "error" not in r]
    served = sum(1 for r in whole if r["traced_again"] == 0 and r["loaded"] > 0)
    lines.append("")
    lines.append(f"{served} of {len(rows)} models start warm with no frame traced again; "
                 f"{sum(r['loaded'] for r in whole)} entries installed, {sum(r['traced_again'] for r in whole)} "
                 f"frames traced again (of {sum(r['traced'] for r in whole)} traced cold); "
                 f"{sum(1 for r in whole if not r['matches_eager'])} mismatches.")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.warm_start")
    parser.add_argument("--models", default=None, help="comma-separated zoo names (default: every model)")
    parser.add_argument("--out", default=None, help="directory for warm_start.md")
    args = parser.parse_args(argv)
    import warnings

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    rows = []
    for entry in zoo.select(args.models.split(",") if args.models else None):
        if "eval" not in entry.modes:
            continue
        with tempfile.TemporaryDirectory(prefix="bytegraph-warm-start-") as directory:
            try:
                row = measure(entry, directory)
            except Exception as error:  # one model's failure is reported, not the end of the run
                row = {"model": entry.name, "error": f"{type(error).__name__}: {error}"}
        rows.append(row)
        print(row, flush=True)
    text = table(rows)
    print(text)
    if args.out:
        with open(os.path.join(args.out, "warm_start.md"), "w") as f:
            f.write("# Warm starts over the model zoo\n\n`python -m benchmarks.warm_start` (inference, \"eager\" "
                    "backend, a new instance of each model in the second run)\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
