"""`make peer`: PyTorch's own test/dynamo files, unchanged, under torch._dynamo and under bytegraph.

Each file runs as its own pytest process twice:

    dynamo     python -m pytest FILE ...
    bytegraph  python -m bytegraph run -m pytest FILE ...

(`bytegraph run` routes torch.compile, torch._dynamo.optimize / optimize_assert, reset, disable,
... to bytegraph; see bytegraph/run.py). The outcome of every test is written as it finishes by a
small pytest plugin (this module, loaded with `-p tools.peer`), so a process that segfaults or
runs past the timeout still reports what it ran: the test running at that moment is recorded as
`crash (signal N)` or `timeout`, and the rest of the file runs on in a fresh process.

The per-file table (passed / xpassed / failed / errors / skipped / xfailed, both modes side by side) is
printed and written to tests/peer/results.md together with, for each mode, the failing tests
grouped by the first line of their error message.

The test files are not fetched at run time: they are read from tests/peer/dynamo/ (see
tests/peer/README.md for where they come from; `--import-from PYTORCH_CHECKOUT` copies them
there from a local pytorch checkout).
"""

import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER_DIR = os.path.join(REPO, "tests", "peer")
DEFAULT_SOURCE = os.path.join(PEER_DIR, "dynamo")
FILES = [
    "test_exceptions.py",
    "test_ctx_manager.py",
    "test_functions.py",
    "test_generator.py",
    "test_sets.py",
    "test_modules.py",
    "test_recompiles.py",
]
# Sibling modules the files import (`from . import test_functions` / `import test_functions`).
HELPERS = {"test_ctx_manager.py": ["test_functions.py"], "test_modules.py": ["test_functions.py"]}
MODES = ("dynamo", "bytegraph")
OUTCOMES = ("passed", "xpassed", "failed", "error", "skipped", "xfailed")
# A test marked as an expected failure (of torch._dynamo) whose body ran and passed: pytest
# reports unittest's "unexpected success" as a failure; here it is a test that passed.
_PASSING = ("passed", "xpassed")
# Environment switches of PyTorch's test harness that would change what the files test.
SCRUBBED_ENV = ("PYTORCH_TEST_WITH_DYNAMO", "PYTORCH_TEST_WITH_INDUCTOR", "PYTORCH_TEST_WITH_AOT_EAGER",
                "PYTORCH_TEST_WITH_CROSSREF", "TORCHDYNAMO_DYNAMIC_SHAPES", "PYTORCH_TEST_WITH_SLOW",
                "TORCH_LOGS", "TORCH_TRACE", "BYTEGRAPH_LOGS", "BYTEGRAPH_TRACE")
MAX_RESTARTS = 20  # fresh processes for one file after crashes / timeouts

_RESULTS_ENV = "BYTEGRAPH_PEER_RESULTS"  # the plugin appends one JSON line per event here
_SKIP_ENV = "BYTEGRAPH_PEER_SKIP"  # a file of node ids the plugin deselects (already run)


# --------------------------------------------------------------------------------------------
# The pytest plugin (runs inside the test process; only active when _RESULTS_ENV is set).

# First lines that say nothing by themselves: the next line (what differed) is added.
_GENERIC_FIRST_LINES = ("AssertionError: Scalars are not equal!", "AssertionError: Tensor-likes are not close!",
                        "AssertionError: Tensor-likes are not equal!", "AssertionError: Booleans mismatch:")


def _first_line(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "(no message)"
    if lines[0].startswith(_GENERIC_FIRST_LINES) and len(lines) > 1:
        # "Expected 5 but got 7." -> "Expected N but got N.", so that such failures group
        return f"{lines[0]} {re.sub(r'-?[0-9][0-9.e+-]*', 'N', lines[1])}"
    return lines[0]


def _emit(record):
    path = os.environ.get(_RESULTS_ENV)
    if not path:
        return
    with open(path, "a") as out:
        out.write(json.dumps(record) + "\n")
        out.flush()


def pytest_collection_modifyitems(config, items):
    path = os.environ.get(_SKIP_ENV)
    if not path or not os.path.exists(path):
        return
    with open(path) as f:
        done = {line.rstrip("\n") for line in f if line.strip()}
    keep = [item for item in items if item.nodeid not in done]
    dropped = [item for item in items if item.nodeid in done]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_runtest_logstart(nodeid, location):
    _emit({"event": "start", "id": nodeid})


def pytest_runtest_logreport(report):
    if not os.environ.get(_RESULTS_ENV):
        return
    outcome = None
    if report.when == "call":
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        elif report.failed and str(report.longrepr).startswith("Unexpected success"):
            outcome = "xpassed"  # unittest.expectedFailure whose test passed
        else:
            outcome = report.outcome
    elif report.failed:
        outcome = "error"
    elif report.skipped:
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    if outcome is None:
        return
    record = {"event": "result", "id": report.nodeid, "when": report.when, "outcome": outcome}
    if outcome in ("failed", "error"):
        record["message"] = _first_line(report)
    _emit(record)


def pytest_runtest_logfinish(nodeid, location):
    _emit({"event": "finish", "id": nodeid})


# --------------------------------------------------------------------------------------------
# The driver.

def _environment(threads):
    env = dict(os.environ)
    for name in SCRUBBED_ENV:
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join([REPO] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                                   if p and os.path.abspath(p) != REPO])
    env["OMP_NUM_THREADS"] = str(threads)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _command(mode, source, filename, keyword):
    pytest_args = [filename, "-p", "no:cacheprovider", "-p", "tools.peer", "-q", "-rfE",
                   # the directory holds the files alone: no ini file, no conftest above it
                   "-c", os.devnull, "--rootdir", source, "--confcutdir", source]
    if keyword:
        pytest_args += ["-k", keyword]
    if mode == "dynamo":
        return [sys.executable, "-m", "pytest", *pytest_args]
    return [sys.executable, "-m", "bytegraph", "run", "-m", "pytest", *pytest_args]


def _read_events(path):
    events = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by a crash
    return events


def run_one(mode, source, filename, keyword, timeout, threads, work):
    """Runs one file in one mode (restarting after a crash or a timeout); returns its record."""
    tag = f"{mode}-{filename[:-3]}"
    results_path = os.path.join(work, tag + ".jsonl")
    skip_path = os.path.join(work, tag + ".skip")
    log_path = os.path.join(work, tag + ".log")
    for path in (results_path, skip_path, log_path):
        if os.path.exists(path):
            os.remove(path)
    env = _environment(threads)
    env[_RESULTS_ENV] = results_path
    env[_SKIP_ENV] = skip_path
    tests = {}  # node id -> {"outcome", "message"}
    incidents = []  # (node id or None, "crash (signal 11)" / "timeout" / "exit N")
    start = time.monotonic()
    returncodes = []
    for attempt in range(MAX_RESTARTS + 1):
        with open(log_path, "a") as log:
            log.write(f"\n===== attempt {attempt}: {' '.join(_command(mode, source, filename, keyword))}\n")
            log.flush()
            proc = subprocess.Popen(_command(mode, source, filename, keyword), cwd=source, env=env,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                returncode = proc.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                returncode = proc.wait()
                timed_out = True
        returncodes.append(returncode)
        started, finished = [], set()
        for event in _read_events(results_path):
            if event["event"] == "start":
                started.append(event["id"])
            elif event["event"] == "finish":
                finished.add(event["id"])
            elif event["event"] == "result":
                current = tests.get(event["id"])
                # the worst of a test's phases wins (a teardown error after a pass is an error)
                if current is None or current["outcome"] in ("passed", "xpassed", "skipped", "xfailed"):
                    tests[event["id"]] = {"outcome": event["outcome"], "message": event.get("message")}
        unfinished = [nodeid for nodeid in started if nodeid not in finished]
        if not timed_out and returncode >= 0:
            if returncode not in (0, 1, 5):  # 5: nothing collected (e.g. all deselected)
                incidents.append((None, f"exit {returncode}"))
            break
        culprit = unfinished[-1] if unfinished else None
        what = "timeout" if timed_out else f"crash (signal {-returncode})"
        incidents.append((culprit, what))
        if culprit is None:
            break  # died outside a test (collection, interpreter shutdown): nothing to skip past
        tests[culprit] = {"outcome": "timeout" if timed_out else "crash", "message": what}
        with open(skip_path, "w") as skip:
            skip.write("\n".join(tests) + "\n")
        os.remove(results_path)
        # the results already read are kept in `tests`; the next process skips them
    counts = collections.Counter(t["outcome"] for t in tests.values())
    return {"mode": mode, "file": filename, "tests": tests, "counts": dict(counts),
            "incidents": incidents, "returncodes": returncodes, "log": log_path,
            "seconds": time.monotonic() - start}


def _cell(record):
    if record is None:
        return "—"
    c = record["counts"]
    text = " / ".join(str(c.get(o, 0)) for o in OUTCOMES)
    crashes = c.get("crash", 0) + c.get("timeout", 0)
    notes = [what for _, what in record["incidents"]]
    if not record["tests"] and notes:
        return " ".join(sorted(set(notes)))
    if crashes or notes:
        text += " + " + ", ".join(f"{n}× {w}" for w, n in collections.Counter(notes).items())
    return text


def _passing(counts):
    return sum(counts.get(outcome, 0) for outcome in _PASSING)


def _better_or_equal(dyn, bg):
    if dyn is None or bg is None:
        return "—"
    d, b = _passing(dyn["counts"]), _passing(bg["counts"])
    return "yes" if b >= d else f"no ({b - d:+d})"


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_MODULE_PATH = re.compile(r"(<module '[^']*') from '[^']*'>")
_BREAK_KIND = re.compile(r"graph break under fullgraph=True \((\w+)\)")
_LOCATION = re.compile(r" \(at [^()]*\)$")  # bytegraph's "(at FILE:LINE in FN)": grouped without it


def _cause(message):
    message = _MODULE_PATH.sub(r"\1>", _ADDRESS.sub("0x…", message or "(no message)"))
    message = _LOCATION.sub("", message)
    return message if len(message) <= 200 else message[:197] + "…"


def _histogram(records, top):
    causes = collections.defaultdict(list)
    for record in records:
        for nodeid, test in record["tests"].items():
            if test["outcome"] in ("failed", "error", "crash", "timeout"):
                label = test["message"] if test["outcome"] in ("crash", "timeout") else _cause(test["message"])
                causes[label].append(f"{record['file']}::{nodeid.split('::', 1)[-1]}")
    ranked = sorted(causes.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return ranked[:top], len(ranked)


def _git_head():
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def render(records, files, modes, wall, jobs, keyword, top=25):
    by_key = {(r["mode"], r["file"]): r for r in records}
    lines = ["| file | torch._dynamo p / xp / f / e / s / x | bytegraph p / xp / f / e / s / x | passing (p + xp): bytegraph ≥ dynamo? |",
             "|---|---|---|---|"]
    totals = {m: collections.Counter() for m in modes}
    for filename in files:
        dyn, bg = by_key.get(("dynamo", filename)), by_key.get(("bytegraph", filename))
        for mode, record in (("dynamo", dyn), ("bytegraph", bg)):
            if record is not None:
                totals[mode].update(record["counts"])
        lines.append(f"| {filename} | {_cell(dyn)} | {_cell(bg)} | {_better_or_equal(dyn, bg)} |")

    def total_cell(mode):
        if mode not in modes:
            return "—"
        c = totals[mode]
        text = " / ".join(str(c.get(o, 0)) for o in OUTCOMES)
        extra = c.get("crash", 0) + c.get("timeout", 0)
        return text + (f" + {extra} crash/timeout" if extra else "")

    ge = "—"
    if set(modes) == set(MODES):
        b, d = _passing(totals["bytegraph"]), _passing(totals["dynamo"])
        ge = "yes" if b >= d else f"no ({b - d:+d})"
    lines.append(f"| **total** | {total_cell('dynamo')} | {total_cell('bytegraph')} | {ge} |")
    table = "\n".join(lines)

    import torch

    out = ["# PyTorch's test/dynamo files under torch._dynamo and under bytegraph", "",
           f"Run {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} by `tools/peer.py` (`make peer`): "
           f"bytegraph {_git_head()}, torch {torch.__version__}, Python {platform.python_version()}, "
           f"{os.cpu_count()} CPUs, --jobs {jobs}" + (f", -k {keyword!r}" if keyword else "") +
           f"; wall time {wall / 60:.1f} min.", "",
           "Each file runs unchanged in its own pytest process: `python -m pytest FILE` (torch._dynamo) "
           "and `python -m bytegraph run -m pytest FILE` (torch.compile, torch._dynamo.optimize and "
           "optimize_assert routed to bytegraph). Columns: passed / xpassed / failed / errors / skipped / "
           "xfailed. xpassed: a test marked `unittest.expectedFailure` (a capability torch._dynamo "
           "lacks) whose body ran and passed, which pytest reports as a failure (\"Unexpected "
           "success\"); it counts as passing in the last column (passed + xpassed). A crash or timeout names the test that "
           "was running; the rest of the file ran on in a fresh process. Where each file comes from "
           "(repository, commit): tests/peer/README.md.", "", table, ""]
    per_mode_time = collections.defaultdict(float)
    for r in records:
        per_mode_time[r["mode"]] += r["seconds"]
    out.append("Process time: " + ", ".join(f"{m} {per_mode_time[m] / 60:.1f} min" for m in modes) + ".")
    out.append("")
    incidents = [(r["mode"], r["file"], nodeid, what) for r in records for nodeid, what in r["incidents"]]
    if incidents:
        out += ["## Crashes, timeouts, abnormal exits", ""]
        out += [f"- {mode}: `{filename}` {('`' + nodeid + '`') if nodeid else '(outside a test)'}: {what}"
                for mode, filename, nodeid, what in incidents]
        out.append("")
    if "bytegraph" in modes:
        kinds = collections.Counter()
        for r in records:
            if r["mode"] == "bytegraph":
                for test in r["tests"].values():
                    kind = _BREAK_KIND.search(test.get("message") or "")
                    if kind and test["outcome"] in ("failed", "error"):
                        kinds[kind.group(1)] += 1
        if kinds:
            out += ["## bytegraph: graph breaks under fullgraph=True, by kind", "",
                    ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()) + ".", ""]
    for mode in modes:
        ranked, ncauses = _histogram([r for r in records if r["mode"] == mode], top)
        nfail = sum(len(ids) for _, ids in _histogram([r for r in records if r["mode"] == mode], 10 ** 9)[0])
        out += [f"## {mode}: failing tests by the first line of their error ({nfail} tests, {ncauses} causes"
                + (f", top {top} shown" if ncauses > top else "") + ")", ""]
        for label, ids in ranked:
            out.append(f"- **{len(ids)}** × `{label.replace('`', chr(39))}`")
            shown = ids if len(ids) <= 12 else ids[:12]
            out.append("  " + ", ".join(f"`{i}`" for i in shown) +
                       (f" … and {len(ids) - 12} more" if len(ids) > 12 else ""))
        out.append("")
    if set(modes) == set(MODES):
        regress = []
        for filename in files:
            dyn, bg = by_key.get(("dynamo", filename)), by_key.get(("bytegraph", filename))
            if dyn is None or bg is None:
                continue
            for nodeid, test in bg["tests"].items():
                if test["outcome"] not in ("passed", "xpassed", "skipped", "xfailed") and \
                        dyn["tests"].get(nodeid, {}).get("outcome") in _PASSING:
                    regress.append(f"{filename}::{nodeid.split('::', 1)[-1]}")
        gained = []
        for filename in files:
            dyn, bg = by_key.get(("dynamo", filename)), by_key.get(("bytegraph", filename))
            if dyn is None or bg is None:
                continue
            for nodeid, test in bg["tests"].items():
                if test["outcome"] in _PASSING and dyn["tests"].get(nodeid, {}).get("outcome") not in (None, *_PASSING):
                    gained.append(f"{filename}::{nodeid.split('::', 1)[-1]}")
        out += [f"## Passing under torch._dynamo but not under bytegraph: {len(regress)}; "
                f"the other way round: {len(gained)}", ""]
        if gained:
            out.append("Passing under bytegraph only: " + ", ".join(f"`{g}`" for g in gained[:40]) +
                       (f" … and {len(gained) - 40} more" if len(gained) > 40 else ""))
            out.append("")
    return table, "\n".join(out)


def import_from(checkout, dest):
    os.makedirs(dest, exist_ok=True)
    for filename in FILES:
        src = os.path.join(checkout, "test", "dynamo", filename)
        if not os.path.exists(src):
            sys.exit(f"peer: {src} does not exist")
        shutil.copyfile(src, os.path.join(dest, filename))
    print(f"peer: copied {len(FILES)} files from {checkout}/test/dynamo to {dest}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="+", metavar="FILE", help=f"a subset of {', '.join(FILES)}")
    parser.add_argument("--only", choices=MODES, help="run one mode only")
    parser.add_argument("-k", dest="keyword", help="passed to pytest -k")
    parser.add_argument("--jobs", type=int, default=1, help="pytest processes at once (default 1)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds for one pytest process (default 3600)")
    parser.add_argument("--source", default=DEFAULT_SOURCE, help="directory holding the files (default tests/peer/dynamo)")
    parser.add_argument("--import-from", metavar="PYTORCH_CHECKOUT",
                        help="copy the files from a local pytorch checkout into --source, then exit")
    parser.add_argument("--output", default=os.path.join(PEER_DIR, "results.md"),
                        help="where the report goes (default tests/peer/results.md); '-' for none")
    parser.add_argument("--top", type=int, default=25, help="causes listed per mode (default 25)")
    args = parser.parse_args(argv)

    source = os.path.abspath(args.source)
    if args.import_from:
        import_from(args.import_from, source)
        return 0
    files = FILES if not args.files else [f if f.endswith(".py") else f + ".py" for f in args.files]
    missing = [f for f in set(files) | {h for f in files for h in HELPERS.get(f, [])}
               if not os.path.exists(os.path.join(source, f))]
    if missing:
        print(f"peer: {', '.join(sorted(missing))} not in {source}.\n"
              "The files are PyTorch's test/dynamo/ files, unchanged; tests/peer/README.md says which "
              "commit. Copy them there, e.g.\n"
              f"  python tools/peer.py --import-from /path/to/pytorch", file=sys.stderr)
        return 2
    modes = MODES if not args.only else (args.only,)
    jobs = max(1, args.jobs)
    threads = max(1, (os.cpu_count() or 1) // jobs)
    work = tempfile.mkdtemp(prefix="bytegraph-peer-")
    # the longest files first, so that --jobs N keeps every worker busy to the end
    order = {"test_functions.py": 0, "test_modules.py": 1, "test_ctx_manager.py": 2, "test_generator.py": 3}
    tasks = sorted(((m, f) for f in files for m in modes), key=lambda mf: (order.get(mf[1], 9), mf[0]))
    records = []
    lock = threading.Lock()
    start = time.monotonic()

    def one(task):
        mode, filename = task
        record = run_one(mode, source, filename, args.keyword, args.timeout, threads, work)
        with lock:
            print(f"peer: {mode:9s} {filename:22s} {_cell(record):40s} {record['seconds']:7.1f}s",
                  flush=True)
        return record

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for record in pool.map(one, tasks):
            records.append(record)
    wall = time.monotonic() - start
    table, report = render(records, files, modes, wall, jobs, args.keyword, args.top)
    print()
    print(table)
    print(f"\nwall time {wall / 60:.1f} min; logs in {work}")
    if args.output != "-":
        with open(args.output, "w") as out:
            out.write(report + "\n")
        print(f"report: {os.path.relpath(args.output, os.getcwd())}")
        raw = os.path.splitext(args.output)[0] + ".json"
        with open(raw, "w") as out:
            json.dump([{k: v for k, v in r.items() if k != "log"} for r in records], out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
