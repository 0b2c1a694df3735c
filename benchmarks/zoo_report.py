"""The zoo's table (in latest.md and zoo.md) and its triage (ZOO_TRIAGE.md): bytegraph's
remaining break reasons across the zoo, ranked by how many models each blocks, each with a
minimal reproducer from tests/capture_gaps.py."""

import collections
import importlib.util
import inspect
import os
import re
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GAPS_PATH = os.path.join(REPO_ROOT, "tests", "capture_gaps.py")


# ---- reading rows ---------------------------------------------------------------------------------


def _system(row, name):
    value = row.get(name)
    return value if isinstance(value, dict) else {}


def verdict(row, name):
    """ok, wrong, error, crash, eager failed, or not run."""
    if "error" in _system(row, "eager"):
        return "eager failed"
    summary = _system(row, name)
    return summary.get("verdict") or ("not run" if not summary else "unfinished")


# generate(): the prompt's forward, the first decoding step, and one more once the growing
# length is made dynamic (torch.compile's count with automatic dynamic shapes).
GENERATE_MAX_GRAPHS = 3
GENERATE_STEPS = 8  # forward calls of one generate() (benchmarks.zoo.GENERATE_TOKENS)


def whole(row, name):
    """Captured whole: one graph (generate(): at most GENERATE_MAX_GRAPHS over its calls), no
    break, nothing left eager, nothing compiled again on the second call, equal to eager."""
    s = _system(row, name)
    most = GENERATE_MAX_GRAPHS if row.get("mode") == "generate" else 1
    return (verdict(row, name) == "ok" and 1 <= (s.get("graphs") or 0) <= most and not s.get("breaks")
            and not s.get("eager_frames") and not s.get("second_call_graphs") and not s.get("recompiles"))


def short_path(path):
    """A file:line without the site-packages or repository prefix."""
    path = str(path)
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    if path.startswith(REPO_ROOT + os.sep):
        return path[len(REPO_ROOT) + 1:]
    return path


def _clip(text, limit):
    text = " ".join(str(text).split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- grouping break reasons -----------------------------------------------------------------------

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
_NUMBER = re.compile(r"\b\d+\b")
_CLASS_IN_VARIABLE = re.compile(r"(ObjectVariable|UserClassVariable|UserFunctionVariable|TypeVariable)\(([^()]*)\)")


def normalized(kind, message):
    """A reason without what varies between models: addresses, numbers, class names inside
    the tracer's value descriptions."""
    message = _ADDRESS.sub("", message)
    message = _CLASS_IN_VARIABLE.sub(r"\1(…)", message)
    message = _NUMBER.sub("N", message)
    return f"{kind}: {message}"


def load_gaps(path=GAPS_PATH, table="GAPS"):
    """A table of tests/capture_gaps.py: GAPS, WRONG_RESULTS or FIXED (empty when absent)."""
    if not os.path.exists(path):
        return []
    module = sys.modules.get("capture_gaps")
    if module is None or os.path.abspath(getattr(module, "__file__", "")) != os.path.abspath(path):
        spec = importlib.util.spec_from_file_location("capture_gaps", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["capture_gaps"] = module  # inspect.getsource finds its classes through it
        spec.loader.exec_module(module)
    return list(getattr(module, table, []))


def _gap_of(event, gaps):
    text = f"{event.get('kind')}: {event.get('message')}"
    for gap in gaps:
        if re.search(gap.matches, text):
            return gap
    return None


def events_of(rows, key="break_events"):
    """[(row, event)] of bytegraph's events in every row: breaks ("break_events"), frames run
    eagerly ("eager_events") or recompilations on the second call ("recompiles")."""
    if key != "recompiles":
        return [(row, event) for row in rows for event in _system(row, "bytegraph").get(key) or []]
    return [(row, {"function": entry["function"], "kind": "recompile", "message": reason, "where": entry["where"]})
            for row in rows for entry in _system(row, "bytegraph").get("second_call_recompile_reasons") or []
            for reason in entry["reasons"][:1]]


def group_reasons(rows, gaps, key="break_events"):
    """Reasons ranked by the models they block: [{title, gap, models, modes, events, where, sample}]."""
    groups = {}
    for row, event in events_of(rows, key):
        gap = _gap_of(event, gaps)
        title = gap.name if gap else normalized(event.get("kind", ""), event.get("message", ""))
        group = groups.setdefault(title, {"title": title, "tag": gap.tag if gap else "", "gap": gap, "models": set(), "modes": set(),
                                          "events": 0, "where": collections.Counter(), "sample": event})
        group["models"].add(row["model"])
        group["modes"].add(f"{row['model']}/{row['mode']}")
        group["events"] += 1
        where = short_path(event["where"]) if event.get("where") else f"in {event.get('function')}"
        group["where"][where] += 1
    return sorted(groups.values(), key=lambda g: (-len(g["models"]), -g["events"], g["title"]))


def top_reasons(row, gaps, count=4):
    """A row's most frequent break reasons (gap tags, or the reason shortened), with counts."""
    counter = collections.Counter()
    for event in _system(row, "bytegraph").get("break_events") or []:
        gap = _gap_of(event, gaps)
        counter[gap.tag if gap else _clip(normalized(event.get("kind", ""), event.get("message", "")), 60)] += 1
    return [f"{title} ({n})" for title, n in counter.most_common(count)]


def blockers(row, gaps, count=4):
    """The gaps' tags (or normalised reasons) that keep a row from one graph, most frequent
    first: its breaks, frames run eagerly and second-call recompiles together."""
    counter = collections.Counter()
    for key in ("break_events", "eager_events", "recompiles"):
        for _, event in events_of([row], key):
            gap = _gap_of(event, gaps)
            counter[gap.tag if gap else normalized(event.get("kind", ""), event.get("message", ""))] += 1
    return [title for title, _ in counter.most_common(count)]


def floors_source(rows, gaps=None):
    """The FLOORS and BROKEN tables of tests/test_zoo.py for these rows, as Python source."""
    gaps = load_gaps() if gaps is None else gaps
    floors, broken = ["FLOORS = {"], ["BROKEN = {"]
    for row in rows:
        s = _system(row, "bytegraph")
        if verdict(row, "bytegraph") != "ok":
            problem = (s.get("error") or {}).get("error") or s.get("crash") or "; ".join(s.get("differences") or [])
            text = f"{verdict(row, 'bytegraph')}: {_clip(problem, 90)}"
            broken.append(f"    ({row['model']!r}, {row['mode']!r}): {text!r},")
            continue
        second = (s.get("second_call_graphs") or 0) + (s.get("recompiles") or 0)
        reason = None if whole(row, "bytegraph") else ", ".join(blockers(row, gaps)) or "several graphs"
        floors.append(f"    ({row['model']!r}, {row['mode']!r}): ({s['graphs']}, {s['ops']}, {second}, {reason!r}),")
    return "\n".join(floors + ["}", ""] + broken + ["}"])


# ---- the table ------------------------------------------------------------------------------------


def _cell(value):
    return "—" if value is None else str(value)


def _correct(row, name):
    v = verdict(row, name)
    return {"ok": "yes", "wrong": "**WRONG**", "error": "**error**", "crash": "**crash**"}.get(v, v)


def summary_lines(rows):
    forward = [r for r in rows if r.get("mode") in ("eval", "train")]
    generate = [r for r in rows if r.get("mode") == "generate"]
    lines = []
    for name, label in (("bytegraph", "bytegraph"), ("torch", "torch.compile")):
        ran = [r for r in forward if _system(r, name)]
        if not ran:
            continue
        n_whole = sum(whole(r, name) for r in ran)
        graphs = sum(_system(r, name).get("graphs") or 0 for r in ran)
        bad = collections.Counter(verdict(r, name) for r in ran if verdict(r, name) != "ok")
        recompiling = sum(bool(_system(r, name).get("second_call_graphs") or _system(r, name).get("recompiles"))
                          for r in ran)
        problems = ", ".join(f"{n} {v}" for v, n in sorted(bad.items())) or "none"
        lines.append(f"- {label}: {n_whole} of {len(ran)} (model, mode) pairs captured whole (one graph, no break, "
                     f"no recompile, equal to eager); {graphs} graphs in all; compiled again on the second call: "
                     f"{recompiling}; not equal to eager: {problems}.")
        for row in generate:
            g = _system(row, name)
            if g:
                lines.append(f"  - {row['model']}: tokens {'equal to' if verdict(row, name) == 'ok' else 'NOT equal to'} "
                             f"eager ({verdict(row, name)}); {g.get('graphs')} graphs over {GENERATE_STEPS} forward calls, "
                             f"{_cell(g.get('second_call_graphs'))} more in a second generate(); "
                             f"{'within' if whole(row, name) else 'not within'} the bound of {GENERATE_MAX_GRAPHS} "
                             f"graphs and no break.")
    return lines


def table_section(results, gaps=None):
    rows = results["rows"]
    gaps = load_gaps() if gaps is None else gaps
    lines = [
        "## 8. Model zoo: capture of whole models (inference and a training step)",
        "",
        "Each architecture from a tiny config with random weights (2 layers, hidden 64, vocab 256), "
        "`eval()` under `torch.no_grad()` and `train()` with `loss.backward()` run eagerly on the "
        "compiled forward's outputs; called twice with the same shapes. Both systems use a counting "
        "backend. graphs/breaks/ops: the first call; 2nd: graphs compiled again on the second call "
        "(bytegraph: + recompiles logged); eager: frames bytegraph ran eagerly; correct: outputs, "
        "gradients and buffers equal to eager on both calls. bytegraph keeps `torch.nn` modules without "
        "submodules as `call_module` nodes where Dynamo inlines them, so op counts differ. Re-run one model with "
        "`python -m benchmarks.zoo --models NAME --mode eval`; the ranked break reasons and their "
        "reproducers are in `ZOO_TRIAGE.md`.",
        "",
    ]
    if results.get("started"):
        lines += [f"Run {results['started']} to {results.get('finished') or '?'}.", ""]
    lines += summary_lines(rows) + [""]
    lines += [
        "| model | mode | bytegraph graphs | breaks | ops | eager | 2nd | correct | torch graphs | breaks | ops | 2nd | correct | top remaining bytegraph break reasons |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        ours, theirs = _system(row, "bytegraph"), _system(row, "torch")
        second = ours.get("second_call_graphs")
        if ours.get("recompiles"):
            second = f"{second or 0} (+{ours['recompiles']} recompiles)"
        if row.get("mode") == "generate":
            second = (f"{_cell(ours.get('second_call_graphs'))}; 1st generate recompiled "
                      f"{_cell(ours.get('first_call_recompiles'))}x")
        reasons = "; ".join(top_reasons(row, gaps)) or ""
        problem = ours.get("error", {}).get("error") if isinstance(ours.get("error"), dict) else None
        problem = problem or ours.get("crash") or "; ".join(ours.get("differences") or [])
        if problem:
            reasons = _clip(problem, 120) + (f" — {reasons}" if reasons else "")
        if "error" in _system(row, "eager"):
            reasons = "eager mode fails: " + _clip(row["eager"]["error"], 100)
        theirs_second = theirs.get("second_call_graphs")
        lines.append(
            f"| {row['model']} | {row['mode']} | {_cell(ours.get('graphs'))} | {_cell(ours.get('breaks'))} | "
            f"{_cell(ours.get('ops'))} | {_cell(ours.get('eager_frames'))} | {_cell(second)} | "
            f"{_correct(row, 'bytegraph')} | {_cell(theirs.get('graphs'))} | {_cell(theirs.get('breaks'))} | "
            f"{_cell(theirs.get('ops'))} | {_cell(theirs_second)} | {_correct(row, 'torch')} | {_clip(reasons, 260)} |")
    return lines + [""]


# ---- the triage -----------------------------------------------------------------------------------


def _source(obj):
    try:
        return inspect.getsource(obj).rstrip()
    except (OSError, TypeError):
        return f"# {obj!r}: source not available"


def _expected_text(gap):
    try:
        value = gap.expected()
    except Exception as error:  # a gap whose expected value cannot be built is shown as such
        return f"<{type(error).__name__}: {error}>"
    return " ".join(repr(value).split())


def _reproducer_text(gap):
    sources = [_source(helper) for helper in gap.helpers] + [_source(gap.function)]
    call = f"`{gap.call_text}`" + (f", then `{gap.observe_text}`," if gap.observe_text else "")
    lines = ["```python", "\n\n\n".join(sources), "```", "", f"Eager mode: {call} gives `{_expected_text(gap)}`."]
    if gap.compiled_text:
        lines.append(f"bytegraph: {gap.compiled_text}.")
    return lines + [""]


def _problem_section(rows, wrong_gaps):
    lines = ["## 1. Wrong results, errors and crashes (first: they are the worst bugs)", ""]
    bad = [(row, name) for row in rows for name in ("bytegraph", "torch")
           if verdict(row, name) in ("wrong", "error", "crash", "unfinished")]
    if not bad:
        lines += ["In the zoo: none. Every (model, mode) gives eager mode's outputs, gradients and buffers under "
                  "both systems, on both calls.", ""]
    else:
        lines += ["| model | mode | system | what | detail |", "|---|---|---|---|---|"]
        for row, name in bad:
            s = _system(row, name)
            detail = (s.get("error") or {}).get("error") if isinstance(s.get("error"), dict) else None
            detail = detail or s.get("crash") or "; ".join(s.get("differences") or [])
            lines.append(f"| {row['model']} | {row['mode']} | {name} | {verdict(row, name)} | {_clip(detail, 300)} |")
        lines.append("")
    if wrong_gaps:
        lines += ["Found by the reproducers (`WRONG_RESULTS` in tests/capture_gaps.py; "
                  "tests/test_zoo.py keeps them as strict xfails):", ""]
        for gap in wrong_gaps:
            lines += [f"### {gap.name}", "", gap.capability, ""] + _reproducer_text(gap)
    return lines


def triage(results, gaps=None):
    rows = results["rows"]
    gaps = load_gaps() if gaps is None else gaps
    models = sorted({row["model"] for row in rows if row.get("mode") != "generate"})
    lines = [
        "# Model zoo triage: what keeps bytegraph from capturing whole models",
        "",
        "Generated by `python -m benchmarks.zoo` (and `make bench`) from `zoo.json`; "
        f"run {results.get('started') or '?'} to {results.get('finished') or '?'}. "
        f"{len(models)} architectures and one generate(), {len(rows)} (model, mode) runs. Each reason below names how many models "
        "it blocks (a model counts once across its modes), how often it was hit, where in the user's code, "
        "and a minimal reproducer (no transformers needed) kept in `tests/capture_gaps.py` with its eager "
        "behaviour. A reason with no reproducer yet is listed by its normalised message.",
        "",
    ]
    lines += summary_lines(rows) + [""]
    lines += _problem_section(rows, load_gaps(table="WRONG_RESULTS"))
    groups = group_reasons(rows, gaps)
    lines += ["## 2. Break reasons ranked by the models they block", "",
              "| rank | tag | reason | models | breaks | where (most frequent) |", "|---:|---|---|---:|---:|---|"]
    for rank, group in enumerate(groups, 1):
        where = ", ".join(f"{w} ({n})" for w, n in group["where"].most_common(2))
        lines.append(f"| {rank} | {group['tag'] or '—'} | {_clip(group['title'], 110)} | {len(group['models'])} | "
                     f"{group['events']} | {_clip(where, 140)} |")
    lines.append("")
    eager_groups = group_reasons(rows, gaps, key="eager_events")
    if eager_groups:
        lines += ["## 3. Why frames ran eagerly (a break that could not be split, or a frame that failed)", "",
                  "| tag | reason | models | frames |", "|---|---|---:|---:|"]
        for group in eager_groups:
            lines.append(f"| {group['tag'] or '—'} | {_clip(group['title'], 140)} | {len(group['models'])} | "
                         f"{group['events']} |")
        lines.append("")
    recompile_groups = group_reasons(rows, gaps, key="recompiles")
    if recompile_groups:
        lines += ["## 4. Why the second call with the same shapes compiled again", "",
                  "The first guard that failed in each recompiled frame (at most 10 frames per run are kept).", "",
                  "| tag | reason | models | frames | where |", "|---|---|---:|---:|---|"]
        for group in recompile_groups:
            where = ", ".join(f"{w} ({n})" for w, n in group["where"].most_common(2))
            lines.append(f"| {group['tag'] or '—'} | {_clip(group['title'], 110)} | {len(group['models'])} | "
                         f"{group['events']} | {_clip(where, 140)} |")
        lines.append("")
    lines += ["## 5. Reasons in detail, with reproducers", ""]
    for rank, group in enumerate(groups, 1):
        sample = group["sample"]
        lines += [f"### {rank}. {group['title']}" + (f" (`{group['tag']}`)" if group["tag"] else ""), "",
                  f"- blocks {len(group['models'])} models: {', '.join(sorted(group['models']))}",
                  f"- {group['events']} breaks; in {', '.join(sorted(group['modes']))}" if len(group['modes']) <= 12
                  else f"- {group['events']} breaks in {len(group['modes'])} (model, mode) runs",
                  f"- logged as: `{_clip(sample.get('kind', '') + ': ' + sample.get('message', ''), 300)}`",
                  "- where: " + (", ".join(f"`{w}` ({n})" for w, n in group["where"].most_common(4)) or "—"),
                  ""]
        gap = group["gap"]
        if gap is not None:
            lines += [gap.capability, ""] + _reproducer_text(gap)
        else:
            lines += ["No reproducer yet.", ""]
    return "\n".join(lines) + "\n"
