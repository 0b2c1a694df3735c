"""Turns the collected results into latest.json, latest.md (tables) and latest.png (ratios)."""

import json
import math
import os
import re

from benchmarks import dynamic_shapes, first_call, inductor_zoo

GOAL_TRACE_SPEEDUP = 10.0  # tracing at least 10x faster than Dynamo (#28)
GOAL_FLOOR_RATIO = 1.5  # within 1.5x of the fake-tensor floor
GOAL_CACHE_HIT_US = 1.0  # at most 1 us of cache-hit overhead for two tensors (#28)


# ---- reading one model's results -----------------------------------------------------------


def _value(row, key):
    """A stage's value, or None when it failed, crashed or did not run."""
    value = row.get(key)
    if isinstance(value, dict) and "error" in value:
        return None
    return value


def _error(row, key):
    value = row.get(key)
    if isinstance(value, dict) and "error" in value:
        return value["error"]
    crash = row.get("crash")
    if crash and (crash.get("stage") == key or (value is None and f"{key}_started" not in row)):
        return crash["how"] + (f" in {crash['stage']}" if crash.get("stage") else "")
    return None


def tracing_seconds(row, system):
    cold, eager = _value(row, f"{system}_cold_s"), row.get("eager_s")
    if cold is None or eager is None:
        return None
    return max(cold - eager, 0.0)


def _ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def bytegraph_note(row):
    """What a reader must know about bytegraph's numbers on this model."""
    notes = []
    for key in ("bytegraph_capture", "bytegraph_cold_s", "per_op"):
        error = _error(row, key)
        if error:
            notes.append(f"{key}: {error}")
            break
    capture = _value(row, "bytegraph_capture")
    if capture and capture.get("eager_frames"):
        what = "frame" if capture["eager_frames"] == 1 else "frames"
        notes.append(f"{capture['eager_frames']} {what} ran eagerly")
        reasons = capture.get("eager_reasons") or capture.get("failures") or capture.get("break_reasons") or []
        if reasons:
            notes.append(_clip(reasons[0], 110))
    return "; ".join(notes)


def _clip(text, limit):
    text = re.sub(r"(?<!\w)/(?:[^\s:()/]+/)+([^\s:()/]+\.py)", r"\1", str(text))  # absolute paths to file names
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ms(seconds):
    return "—" if seconds is None else f"{seconds * 1e3:.2f}"


def _us(seconds, digits=1):
    return "—" if seconds is None else f"{seconds * 1e6:.{digits}f}"


def _x(ratio):
    return "—" if ratio is None else f"{ratio:.2f}x"


def _goal(ok):
    return "—" if ok is None else ("met" if ok else "**missed**")


# ---- tables -----------------------------------------------------------------------------------


def machine_section(results):
    m = results["machine"]
    s = results["settings"]
    return [
        "## Machine",
        "",
        f"- CPU: {m['cpu']}, {m['cores']} cores; torch intra-op threads in the measurements: {m['torch_threads']}",
        f"- Python {m['python']}, torch {m['torch']}, transformers {m.get('transformers') or 'not installed'}",
        f"- {m['platform']}",
        f"- Load average (1, 5, 15 min) before: {m['load_average']}, after: {m.get('load_average_after')}"
        + (" — the machine was shared with other work while this ran" if (m['load_average'] or [0])[0] > 0.5 else ""),
        f"- Run from {results['started']} to {results.get('finished')}; medians of {s['repeats']} timed repetitions "
        f"(after one untimed warm-up); ratios are taken within this run{'; SMOKE run (tiny counts)' if s['smoke'] else ''}",
        "",
    ]


def tracing_section(results):
    lines = [
        "## 1. Tracing time (backend \"eager\": cold first call minus one eager call)",
        "",
        "Each repetition starts from an empty cache (`bytegraph.reset()` / `torch._dynamo.reset()`). "
        f"Goal: bytegraph at least {GOAL_TRACE_SPEEDUP:g}x faster than Dynamo. A model on which bytegraph "
        "ran a frame eagerly (graph break or compile failure) did less work than Dynamo, so its speed-up "
        "is not counted towards the goal.",
        "",
        "| model | eager call (ms) | bytegraph tracing (ms) | Dynamo tracing (ms) | Dynamo / bytegraph | goal | bytegraph notes |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for row in results["models"]:
        ours, theirs = tracing_seconds(row, "bytegraph"), tracing_seconds(row, "torch")
        ratio = _ratio(theirs, ours)
        capture = _value(row, "bytegraph_capture") or {}
        whole = bool(capture) and not capture.get("eager_frames")
        ok = None if ratio is None or not whole else ratio >= GOAL_TRACE_SPEEDUP
        theirs_text = _ms(theirs) if theirs is not None else (_error(row, "torch_cold_s") or "—")
        lines.append(f"| {row['model']['name']} | {_ms(row.get('eager_s'))} | {_ms(ours)} | {theirs_text} | "
                     f"{_x(ratio)} | {_goal(ok)} | {bytegraph_note(row)} |")
    return lines + [""]


def capture_section(results):
    lines = [
        "## 5. Capture: graphs, breaks and ops",
        "",
        "bytegraph: a `CompileCounter` backend, breaks and compile failures from its loggers (a frame "
        "that breaks or fails runs eagerly as a whole; its callees may still be captured as graphs of "
        "their own). torch: `torch._dynamo.explain`. Ops are call nodes; bytegraph keeps torch.nn "
        "modules without submodules as `call_module` nodes where Dynamo inlines them, so op counts differ.",
        "",
        "| model | bytegraph graphs | ops | breaks | eager frames | Dynamo graphs | ops | breaks | Dynamo's first break |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in results["models"]:
        ours, theirs = _value(row, "bytegraph_capture"), _value(row, "torch_capture")
        if ours:
            ours_cells = f"{ours['graphs']} | {ours['ops']} | {ours['breaks']} | {ours['eager_frames']}"
        else:
            ours_cells = f"{_clip(_error(row, 'bytegraph_capture') or 'not run', 80)} | | |"
        if theirs:
            reason = _clip((theirs.get("break_reasons") or [""])[0], 70)
            theirs_cells = f"{theirs['graphs']} | {theirs['ops']} | {theirs['breaks']} | {reason}"
        else:
            theirs_cells = f"{_clip(_error(row, 'torch_capture') or 'not run', 80)} | | |"
        lines.append(f"| {row['model']['name']} | {ours_cells} | {theirs_cells} |")
    return lines + [""]


def per_op_section(results):
    lines = [
        "## 3. Tracing cost per captured op vs the fake-tensor floor",
        "",
        "bytegraph's tracer alone (`bytegraph._C.trace.trace`) on the model's top frame, against running "
        "the captured graph's nodes once on FakeTensors in a new FakeTensorMode (inputs and parameters faked "
        f"beforehand, untimed, so the floor is the ops alone). Goal: within {GOAL_FLOOR_RATIO:g}x of the floor. "
        "The warm-mode floor replays the ops a second time in the same mode (what per-mode caches save); "
        "Dynamo's tracing time per op of its own graph is given for scale.",
        "",
        "| model | ops | bytegraph trace (ms) | per op (us) | floor per op (us) | trace / floor | goal | warm-mode floor per op (us) | Dynamo per op (us) |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for row in results["models"]:
        per_op = _value(row, "per_op")
        theirs_capture = _value(row, "torch_capture") or {}
        theirs = tracing_seconds(row, "torch")
        theirs_per_op = theirs / theirs_capture["ops"] if theirs is not None and theirs_capture.get("ops") else None
        if not per_op or "trace_s" not in per_op:
            why = (per_op or {}).get("break") or _error(row, "per_op") or "not run"
            lines.append(f"| {row['model']['name']} | — | top frame not traced whole: {_clip(why, 60)} | | | | — | "
                         f"{_us(theirs_per_op)} |")
            continue
        ops = max(per_op["ops"], 1)
        ratio = _ratio(per_op["trace_s"], per_op["fake_floor_s"])
        lines.append(f"| {row['model']['name']} | {per_op['ops']} | {_ms(per_op['trace_s'])} | "
                     f"{_us(per_op['trace_s'] / ops)} | {_us(per_op['fake_floor_s'] / ops)} | {_x(ratio)} | "
                     f"{_goal(None if ratio is None else ratio <= GOAL_FLOOR_RATIO)} | "
                     f"{_us(per_op.get('warm_floor_s', 0) / ops)} | {_us(theirs_per_op)} |")
    return lines + [""]


def cache_section(results):
    cache = results.get("cache") or {}
    rows = _value(cache, "cache_hit")
    lines = [
        "## 2. Cache-hit overhead (backend \"eager\")",
        "",
        "Time per call of an already compiled tiny function (sums of 1, 2 or 8 tensors of 4 floats) minus "
        "the eager function's time per call; variants interleaved, median over batches. The floor is one "
        f"call of an empty Python function with the same arguments. Goal: at most {GOAL_CACHE_HIT_US:g} us for "
        "two tensors, and below torch.compile's at every size.",
        "",
        "| tensors | eager call (us) | empty call, floor (us) | bytegraph overhead (us) | torch.compile overhead (us) | torch / bytegraph | goal |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    if not rows:
        why = _error(cache, "cache_hit") or (cache.get("crash") or {}).get("how") or "not run"
        return lines + [f"| — | failed: {_clip(why, 100)} | | | | | |", ""] + _cache_by_python_lines(results)
    for row in rows:
        ours, theirs = row["bytegraph_overhead_s"], row["torch_overhead_s"]
        ok = ours < theirs and (row["tensors"] != 2 or ours * 1e6 <= GOAL_CACHE_HIT_US)
        lines.append(f"| {row['tensors']} | {_us(row['eager_s'], 2)} | {_us(row['empty_call_s'], 2)} | {_us(ours, 2)} | "
                     f"{_us(theirs, 2)} | {_x(_ratio(theirs, ours))} | {_goal(ok)} |")
    return lines + [""] + _cache_by_python_lines(results)


def _cache_by_python_lines(results):
    measured = results.get("cache_by_python") or {}
    if not measured.get("rows"):
        return []
    lines = [f"The same job under each interpreter this checkout is built for ({measured['started']} to "
             f"{measured['finished']}), bytegraph / torch.compile overhead in us:", "",
             "| Python | 1 tensor | 2 tensors | 8 tensors | goal (2 tensors) |", "|---|---:|---:|---:|---|"]
    for row in measured["rows"]:
        by_size = {r["tensors"]: r for r in _value(row, "cache_hit") or []}
        if not by_size:
            why = _error(row, "cache_hit") or (row.get("crash") or {}).get("how") or "not run"
            lines.append(f"| {row['python']} | failed: {_clip(why, 80)} | | | |")
            continue
        cells = [f"{_us(by_size[n]['bytegraph_overhead_s'], 2)} / {_us(by_size[n]['torch_overhead_s'], 2)}"
                 if n in by_size else "—" for n in (1, 2, 8)]
        two = by_size.get(2)
        lines.append(f"| {row['python']} | {' | '.join(cells)} | "
                     f"{_goal(two['bytegraph_overhead_s'] * 1e6 <= GOAL_CACHE_HIT_US) if two else '—'} |")
    return lines + [""]


def _cache_by_python_summary(results):
    parts = []
    for row in (results.get("cache_by_python") or {}).get("rows") or []:
        two = [r for r in _value(row, "cache_hit") or [] if r["tensors"] == 2]
        if two:
            us = two[0]["bytegraph_overhead_s"] * 1e6
            parts.append(f"{row['python']} {us:.2f} us ({_goal(us <= GOAL_CACHE_HIT_US)})")
    return f" By interpreter: {', '.join(parts)}." if parts else ""


def inductor_rows(results):
    """{model: {system: measurement or error text}} in the order measured."""
    table = {}
    for row in results.get("inductor", []):
        name = (row.get("model") or {}).get("name", "?")
        value = _value(row, "inductor")
        table.setdefault(name, {})[row["system"]] = value if value else (_error(row, "inductor") or "not run")
    return table


def inductor_section(results):
    lines = [
        "## 4. Inductor on CPU: first-call latency and steady state",
        "",
        "First calls: each (model, system) in a fresh process with an empty `TORCHINDUCTOR_CACHE_DIR`, "
        "inductor's modules imported before the clock starts. Steady state: one process holding eager, "
        "torch.compile and bytegraph versions, timed in interleaved batches; median over batches of the "
        "mean time per call. Goal: bytegraph's steady state equal to torch.compile's within noise.",
        "",
    ]
    table = inductor_rows(results)
    if not table:
        return lines + ["Not run (`--no-inductor`, or no model selected).", ""]
    lines += [
        "| model | bytegraph first call (s) | torch first call (s) | eager (us) | bytegraph steady (us) | torch steady (us) | bytegraph / torch steady | matches eager |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, systems in table.items():
        ours, theirs = systems.get("bytegraph"), systems.get("torch")
        if not isinstance(ours, dict) or not isinstance(theirs, dict):
            errors = "; ".join(f"{s}: {_clip(v, 80)}" for s, v in systems.items() if not isinstance(v, dict))
            lines.append(f"| {name} | | | | | | | {errors} |")
            continue
        steady = ours.get("steady") or {}
        ratio = _ratio(steady.get("bytegraph_s"), steady.get("torch_s"))
        lines.append(
            f"| {name} | {ours['first_call_s']:.2f} | {theirs['first_call_s']:.2f} | {_us(steady.get('eager_s'))} | "
            f"{_us(steady.get('bytegraph_s'))} | {_us(steady.get('torch_s'))} | {_x(ratio)} | "
            f"bytegraph {'yes' if ours['matches_eager'] else 'NO'}, torch {'yes' if theirs['matches_eager'] else 'NO'} |")
    return lines + [""]


def profile_section(results):
    profiles = [p for p in results.get("profiles", []) if _value(p, "profile")]
    if not profiles:
        return []
    lines = [
        "## Where bytegraph's tracing time goes (cProfile of `bytegraph._C.trace.trace`)",
        "",
        "Self time summed by where the code runs, per trace (profiler overhead included, so the total "
        "exceeds the plain timing above). The floor above excludes making the FakeTensorMode, faking the "
        "inputs and parameters and building the torch.fx GraphModule; a trace pays for all of them.",
        "",
    ]
    for entry in profiles:
        profile = entry["profile"]
        n = profile["repeats"]
        lines += [f"### {entry['model']['name']}: {profile['total_s'] / n * 1e3:.2f} ms per trace under cProfile", "",
                  "| phase (cumulative) | ms per trace | share |", "|---|---:|---:|"]
        for label, seconds in profile.get("phases", []):
            lines.append(f"| {label} | {seconds / n * 1e3:.2f} | {seconds / profile['total_s']:.0%} |")
        lines += ["", "| self time by where the code lives | ms per trace | share |", "|---|---:|---:|"]
        for label, seconds in profile["by_category"]:
            lines.append(f"| {label} | {seconds / n * 1e3:.2f} | {seconds / profile['total_s']:.0%} |")
        lines += ["", "Top functions by self time:", "", "| function | calls per trace | self ms per trace | cumulative ms per trace |",
                  "|---|---:|---:|---:|"]
        for row in profile["top"][:12]:
            lines.append(f"| `{_clip(row['function'], 90)}` | {row['calls'] / n:.0f} | {row['self_s'] / n * 1e3:.3f} | "
                         f"{row['cumulative_s'] / n * 1e3:.3f} |")
        lines.append("")
    return lines


def crash_section(results):
    crashed = [row for row in results["models"] + results.get("inductor", []) + [results.get("cache") or {}]
               + results.get("profiles", []) if row.get("crash")]
    if not crashed:
        return []
    lines = ["## Jobs that crashed or timed out", "",
             "| job | what happened | stage | last lines of stderr |", "|---|---|---|---|"]
    for row in crashed:
        name = (row.get("model") or {}).get("name", "cache-hit")
        if row.get("system"):
            name += f" (inductor, {row['system']})"
        tail = _clip(_crash_lines(row["crash"]["stderr_tail"]), 260)
        lines.append(f"| {name} | {row['crash']['how']} | {row['crash']['stage']} | {tail} |")
    return lines + [""]


def _crash_lines(stderr):
    """The fatal error and the innermost frames faulthandler printed, else stderr's last lines."""
    lines = [line.strip() for line in stderr.strip().splitlines()]
    for i, line in enumerate(lines):
        if line.startswith("Fatal Python error"):
            frames = [entry for entry in lines[i + 1:] if entry.startswith("File ")][:2]
            return " / ".join([line] + frames)
    return " ".join(lines[-3:])


def summary_section(results):
    """The goals, met or missed, in a few lines (details in the numbered sections)."""
    lines = ["## Goals", ""]
    whole, speedups, not_whole = [], [], []
    for row in results["models"]:
        capture = _value(row, "bytegraph_capture")
        ratio = _ratio(tracing_seconds(row, "torch"), tracing_seconds(row, "bytegraph"))
        if capture and not capture.get("eager_frames") and ratio is not None:
            whole.append(row["model"]["name"])
            speedups.append(ratio)
        else:
            not_whole.append(row["model"]["name"])
    if speedups:
        met = sum(r >= GOAL_TRACE_SPEEDUP for r in speedups)
        lines.append(f"- Tracing at least {GOAL_TRACE_SPEEDUP:g}x faster than Dynamo: {met} of {len(speedups)} models "
                     f"captured whole ({min(speedups):.1f}x to {max(speedups):.1f}x); not measurable where bytegraph "
                     f"did not capture the model whole: {', '.join(not_whole) or 'none'}.")
    floors = []
    for row in results["models"]:
        per_op = _value(row, "per_op") or {}
        if "trace_s" in per_op:
            floors.append(per_op["trace_s"] / per_op["fake_floor_s"])
    if floors:
        met = sum(r <= GOAL_FLOOR_RATIO for r in floors)
        lines.append(f"- Tracing within {GOAL_FLOOR_RATIO:g}x of the fake-tensor floor: {met} of {len(floors)} models "
                     f"({min(floors):.1f}x to {max(floors):.1f}x the floor); see the profile section for where the time goes.")
    rows = _value(results.get("cache") or {}, "cache_hit") or []
    two = [r for r in rows if r["tensors"] == 2]
    if two:
        below = all(r["bytegraph_overhead_s"] < r["torch_overhead_s"] for r in rows)
        lines.append(f"- Cache-hit overhead at most {GOAL_CACHE_HIT_US:g} us for two tensors: "
                     f"{two[0]['bytegraph_overhead_s'] * 1e6:.2f} us ({_goal(two[0]['bytegraph_overhead_s'] * 1e6 <= GOAL_CACHE_HIT_US)}); "
                     f"below torch.compile's at every size: {_goal(below)}.{_cache_by_python_summary(results)}")
    steady = []
    for name, systems in inductor_rows(results).items():
        measured = (systems.get("bytegraph") or {}).get("steady") if isinstance(systems.get("bytegraph"), dict) else None
        if measured:
            steady.append(f"{name} {measured['bytegraph_s'] / measured['torch_s']:.2f}x")
    if steady:
        lines.append(f"- Inductor steady state, bytegraph / torch.compile: {', '.join(steady)} (1.00x is parity).")
    lines += inductor_zoo.summary_lines(results)
    lines += first_call.summary_lines(results.get("first_call"))
    lines += dynamic_shapes.summary_lines(results)
    crashed = [row["model"]["name"] for row in results["models"] if row.get("crash")]
    if crashed:
        lines.append(f"- bytegraph crashed the process on: {', '.join(crashed)} (see the last section).")
    return lines + [""]


def markdown(results):
    lines = ["# bytegraph vs torch.compile: benchmark results", "",
             "Generated by `make bench` (`python -m benchmarks.run`); the chart is `latest.png`. "
             "Hand-written notes on the failures and the profile of a committed run: `ANALYSIS.md`.", ""]
    lines += machine_section(results)
    lines += summary_section(results)
    lines += tracing_section(results)
    lines += cache_section(results)
    lines += per_op_section(results)
    lines += inductor_section(results)
    lines += inductor_zoo.report_section(results)
    lines += capture_section(results)
    lines += first_call.report_section(results)
    lines += dynamic_shapes.report_section(results)
    if results.get("zoo"):
        from benchmarks import zoo_report

        lines += zoo_report.table_section(results["zoo"])
    lines += profile_section(results)
    lines += crash_section(results)
    return "\n".join(lines) + "\n"


# ---- chart ------------------------------------------------------------------------------------


def chart(results, path):
    """Four panels of ratios; returns False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))

    names, speedups = [], []
    for row in results["models"]:
        ratio = _ratio(tracing_seconds(row, "torch"), tracing_seconds(row, "bytegraph"))
        capture = _value(row, "bytegraph_capture") or {}
        if ratio is not None and capture and not capture.get("eager_frames"):
            names.append(row["model"]["name"])
            speedups.append(ratio)
    _bars(axes[0][0], names, speedups, GOAL_TRACE_SPEEDUP, "Tracing: Dynamo time / bytegraph time",
          "x faster (higher is better)", log=True)

    names, floors = [], []
    for row in results["models"]:
        per_op = _value(row, "per_op") or {}
        if "trace_s" in per_op:
            names.append(row["model"]["name"])
            floors.append(per_op["trace_s"] / per_op["fake_floor_s"])
    _bars(axes[0][1], names, floors, GOAL_FLOOR_RATIO, "Tracing per op: bytegraph / fake-tensor floor",
          "x the floor (lower is better)")

    ax = axes[1][0]
    rows = _value(results.get("cache") or {}, "cache_hit") or []
    if rows:
        xs = range(len(rows))
        ax.bar([x - 0.2 for x in xs], [r["bytegraph_overhead_s"] * 1e6 for r in rows], 0.4, label="bytegraph")
        ax.bar([x + 0.2 for x in xs], [r["torch_overhead_s"] * 1e6 for r in rows], 0.4, label="torch.compile")
        ax.plot([x for x in xs], [r["empty_call_s"] * 1e6 for r in rows], "k_", markersize=30,
                label="empty Python call")
        ax.axhline(GOAL_CACHE_HIT_US, color="red", linestyle="--", linewidth=1, label="goal (2 tensors)")
        ax.set_xticks(list(xs), [f"{r['tensors']} tensor{'s' if r['tensors'] > 1 else ''}" for r in rows])
        ax.legend()
    ax.set_title("Cache-hit overhead per call (us, lower is better)")

    names, steady, first = [], [], []
    for name, systems in inductor_rows(results).items():
        ours, theirs = systems.get("bytegraph"), systems.get("torch")
        if isinstance(ours, dict) and isinstance(theirs, dict):
            names.append(name)
            measured = ours.get("steady") or {}
            steady.append(_ratio(measured.get("bytegraph_s"), measured.get("torch_s")) or 0.0)
            first.append(ours["first_call_s"] / theirs["first_call_s"])
    ax = axes[1][1]
    if names:
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], steady, 0.4, label="steady state")
        ax.bar([x + 0.2 for x in xs], first, 0.4, label="first call")
        ax.axhline(1.0, color="red", linestyle="--", linewidth=1, label="parity")
        ax.set_xticks(list(xs), names)
        ax.legend()
    ax.set_title("Inductor: bytegraph time / torch.compile time (lower is better)")

    fig.suptitle(f"bytegraph vs torch.compile — {results['machine']['cpu']}, {results['machine']['cores']} cores, "
                 f"torch {results['machine']['torch']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def _bars(ax, names, values, goal, title, ylabel, log=False):
    if names:
        colors = ["tab:green" if (v >= goal if log else v <= goal) else "tab:orange" for v in values]
        ax.bar(range(len(names)), values, color=colors)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
        ax.axhline(goal, color="red", linestyle="--", linewidth=1, label=f"goal {goal:g}x")
        if log and all(v > 0 and math.isfinite(v) for v in values):
            ax.set_yscale("log")
        ax.legend()
    ax.set_title(title)
    ax.set_ylabel(ylabel)


def write(results, out_dir):
    paths = []
    json_path = os.path.join(out_dir, "latest.json")
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1, default=str)
    paths.append(json_path)
    md_path = os.path.join(out_dir, "latest.md")
    with open(md_path, "w") as f:
        f.write(markdown(results))
    paths.append(md_path)
    png_path = os.path.join(out_dir, "latest.png")
    if chart(results, png_path):
        paths.append(png_path)
    return paths
