"""Dynamic shapes: a batch-size sweep and a sequence-length sweep, bytegraph vs torch.compile.

One job sweeps one model along one axis (sizes 1..64) with one system, one `dynamic=` setting
(None: automatic, or True) and one backend ("eager" or "inductor"), in a process of its own
with an empty TORCHINDUCTOR_CACHE_DIR (benchmarks.run sees to it), so no job reuses what
another compiled. It reports:

- graphs: how many graphs the backend was given over the sweep;
- compile_s: the first pass over the sweep (every size once, compiling as needed) minus the
  same pass once everything is compiled: the time spent compiling;
- steady_s: mean time per call of that second pass (every call a cache hit), next to eager's;
- matches: every compiled result of the first pass equals eager's.

`hit_cost` answers "is a cache hit on a dynamic entry as cheap as on a static one": the
overhead over eager of a call that hits a static entry and of one that hits a dynamic entry,
for both systems, at one size.
"""

import torch

from benchmarks import models
from benchmarks.timing import clock, median, per_call_seconds

SIZES = list(range(1, 65))
MODELS = ["MLP", "TransformerEncoder", "GPT-2"]
# Inductor spends tens of seconds per graph on this class of machine: GPT-2, which bytegraph
# splits into many graphs, is swept with inductor only on request (--dynamic-inductor-models).
INDUCTOR_MODELS = ["MLP", "TransformerEncoder"]
AXES = ["batch", "sequence"]


def _input_for(name, axis, size):
    """Arguments of model `name` with `size` along `axis` (the MLP has no sequence axis)."""
    if name == "MLP":
        return (torch.randn(size, 64),)
    batch, length = (size, 16) if axis == "batch" else (2, size)
    return (torch.randint(0, 256, (batch, length)),)


def applicable(name, axis):
    return not (name == "MLP" and axis == "sequence")


def _import_compilers(backend):
    """Imports both systems' modules before any clock starts: importing is not compiling
    (torch.compile imports Dynamo when it is called, bytegraph's first trace when it makes
    its first fake-tensor mode, which imports Dynamo too)."""
    from torch import _dynamo  # noqa: F401
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    from bytegraph._bridge_shapes import SourceName

    # One symbolic fake tensor: the modules symbol creation imports on first use are loaded.
    context = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC])
    FakeTensorMode(shape_env=ShapeEnv()).from_tensor(torch.zeros(3), source=SourceName("warm"), symbolic_context=context)
    if backend == "inductor":
        from torch._inductor import compile_fx  # noqa: F401


def _counting_backend(system, backend):
    """A backend that counts the graphs it is given, then compiles them with `backend`."""
    if system == "bytegraph":
        from bytegraph.testing import CompileCounterWithBackend

        return CompileCounterWithBackend(backend)
    from torch._dynamo.backends.registry import lookup_backend

    inner = lookup_backend(backend)

    class Counter:
        frame_count = 0

        def __call__(self, gm, example_inputs):
            Counter.frame_count += 1
            return inner(gm, example_inputs)

    return Counter()


def _compile(system, fn, backend, dynamic):
    if system == "bytegraph":
        import bytegraph

        return bytegraph.compile(fn, backend=backend, dynamic=dynamic)
    return torch.compile(fn, backend=backend, dynamic=dynamic)


def _output(value):
    """The tensor a model returns (transformers return a ModelOutput)."""
    return value.last_hidden_state if hasattr(value, "last_hidden_state") else value


def sweep(name, axis, system, backend, dynamic, sizes=SIZES):
    """One sweep of model `name` along `axis`; see the module doc for what is measured."""
    from bytegraph.testing import same

    _import_compilers(backend)
    (model,) = models.select(names=[name])
    fn, _, _ = model.make()
    inputs = [_input_for(name, axis, size) for size in sizes]
    counter = _counting_backend(system, backend)
    compiled = _compile(system, fn, counter, dynamic)
    matches = True
    with torch.no_grad():
        expected = [_output(fn(*args)) for args in inputs]
        start = clock()
        first = [_output(compiled(*args)) for args in inputs]
        first_pass = clock() - start
        matches = all(same(e, r, rtol=1e-3, atol=1e-4) for e, r in zip(expected, first))
        passes = {"compiled": [], "eager": []}
        for _ in range(3):  # interleaved, median of three passes
            for label, variant in (("compiled", compiled), ("eager", fn)):
                start = clock()
                for args in inputs:
                    variant(*args)
                passes[label].append(clock() - start)
    steady_pass = median(passes["compiled"])
    return {
        "model": name, "axis": axis, "system": system, "backend": backend, "dynamic": dynamic,
        "sizes": [sizes[0], sizes[-1]], "graphs": counter.frame_count, "matches": bool(matches),
        "first_pass_s": first_pass, "compile_s": max(first_pass - steady_pass, 0.0),
        "steady_s": steady_pass / len(sizes), "eager_s": median(passes["eager"]) / len(sizes),
    }


# ---- cache hit on a dynamic entry ------------------------------------------------------------------


def _two(a, b):
    return a + b


def hit_cost(*, calls=3000, batches=9):
    """Overhead over eager per call, for a static and a dynamic entry of each system: the
    function of two tensors of cache_hit.py and the MLP, both called at one size."""
    import bytegraph
    from torch import _dynamo

    (mlp,) = models.select(names=["MLP"])
    mlp_fn, _, _ = mlp.make()
    cases = [("a + b (2 tensors)", _two, (torch.randn(4, 3), torch.randn(4, 3))),
             ("MLP", mlp_fn, (torch.randn(8, 64),))]
    rows = []
    with torch.no_grad():
        for label, fn, args in cases:
            bytegraph.reset()
            _dynamo.reset()
            variants = {"eager": fn}
            for system in ("bytegraph", "torch"):
                for dynamic in (False, True):
                    compiled = _compile(system, fn, "eager", dynamic)
                    compiled(*args)  # compile now: every timed call is a hit
                    variants[f"{system}_{'dynamic' if dynamic else 'static'}"] = compiled
            timed = {name: [] for name in variants}
            for _ in range(batches):  # interleaved, so load changes hit every variant alike
                for name, variant in variants.items():
                    timed[name].append(per_call_seconds(variant, args, calls=calls, batches=1))
            medians = {name: median(values) for name, values in timed.items()}
            row = {"case": label, "eager_s": medians["eager"]}
            for name, value in medians.items():
                if name != "eager":
                    row[f"{name}_overhead_s"] = value - medians["eager"]
            rows.append(row)
    bytegraph.reset()
    _dynamo.reset()
    return rows


# ---- report ---------------------------------------------------------------------------------------


def _ms(seconds):
    return "—" if seconds is None else f"{seconds * 1e3:.2f}"


def _setting(dynamic):
    return "auto" if dynamic is None else str(dynamic)


def report_section(results):
    """The markdown section of the report (benchmarks/report.py places it)."""
    rows = [row.get("sweep") for row in results.get("dynamic", [])]
    errors = [row for row in results.get("dynamic", []) if not isinstance(row.get("sweep"), dict)
              or "error" in row.get("sweep", {})]
    hits = (results.get("dynamic_hits") or {}).get("hit_cost")
    lines = [
        "## 7. Dynamic shapes: size sweeps",
        "",
        f"Each model called once per size {SIZES[0]}..{SIZES[-1]} along one axis (batch, or sequence "
        "length), compiled with `dynamic=None` (automatic: static first, then the dimensions seen to "
        "change) or `dynamic=True`, each (system, setting, backend) in its own process with empty "
        "inductor caches. Graphs: graphs given to the backend over the sweep. Compile: first pass over "
        "the sweep minus a pass where every call hits. Steady: mean time per call of that pass. "
        "Goals: no more graphs than torch.compile; total compile time well below torch.compile's.",
        "",
    ]
    rows = [row for row in rows if isinstance(row, dict) and "error" not in row]
    if not rows:
        return lines + ["Not run (`--no-dynamic`).", ""]
    lines += [
        "| model | axis | backend | dynamic | graphs bytegraph / torch | compile (s) bytegraph / torch | "
        "steady per call (ms) bytegraph / torch / eager | matches eager |",
        "|---|---|---|---|---|---|---|---|",
    ]
    table = {}
    for row in rows:
        table.setdefault((row["model"], row["axis"], row["backend"], _setting(row["dynamic"])), {})[row["system"]] = row
    for (name, axis, backend, setting), systems in table.items():
        ours, theirs = systems.get("bytegraph"), systems.get("torch")
        if ours is None or theirs is None:
            continue
        graphs_ok = ours["graphs"] <= theirs["graphs"]
        lines.append(
            f"| {name} | {axis} | {backend} | {setting} | {ours['graphs']} / {theirs['graphs']}"
            f"{'' if graphs_ok else ' (more)'} | {ours['compile_s']:.2f} / {theirs['compile_s']:.2f} | "
            f"{_ms(ours['steady_s'])} / {_ms(theirs['steady_s'])} / {_ms(ours['eager_s'])} | "
            f"{'yes' if ours['matches'] else 'NO'} / {'yes' if theirs['matches'] else 'NO'} |")
    for row in errors:
        sweep_row = row.get("sweep") if isinstance(row.get("sweep"), dict) else {}
        what = sweep_row.get("error") or (row.get("crash") or {}).get("how") or "not run"
        lines.append(f"| {' / '.join(str(x) for x in row.get('job', []))} | | | | | | | failed: {what[:100]} |")
    lines.append("")
    if hits:
        lines += [
            "Cache hit on a dynamic entry vs a static one (backend \"eager\", one size, overhead over eager "
            "per call; goal: dynamic within 1.5x of static):",
            "",
            "| case | eager (us) | bytegraph static (us) | bytegraph dynamic (us) | dynamic / static | "
            "torch static (us) | torch dynamic (us) |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for hit in hits:
            ratio = hit["bytegraph_dynamic_overhead_s"] / hit["bytegraph_static_overhead_s"]
            lines.append(
                f"| {hit['case']} | {hit['eager_s'] * 1e6:.2f} | {hit['bytegraph_static_overhead_s'] * 1e6:.2f} | "
                f"{hit['bytegraph_dynamic_overhead_s'] * 1e6:.2f} | {ratio:.2f}x "
                f"({'met' if ratio <= 1.5 else 'missed'}) | {hit['torch_static_overhead_s'] * 1e6:.2f} | "
                f"{hit['torch_dynamic_overhead_s'] * 1e6:.2f} |")
        lines.append("")
    return lines


def summary_lines(results):
    """Goal lines for the report's summary."""
    rows = [row.get("sweep") for row in results.get("dynamic", [])]
    rows = [row for row in rows if isinstance(row, dict) and "error" not in row]
    if not rows:
        return []
    pairs = {}
    for row in rows:
        pairs.setdefault((row["model"], row["axis"], row["backend"], _setting(row["dynamic"])), {})[row["system"]] = row
    pairs = [p for p in pairs.values() if "bytegraph" in p and "torch" in p]
    fewer = sum(p["bytegraph"]["graphs"] <= p["torch"]["graphs"] for p in pairs)
    ours = sum(p["bytegraph"]["compile_s"] for p in pairs)
    theirs = sum(p["torch"]["compile_s"] for p in pairs)
    lines = [f"- Dynamic shapes, no more graphs than torch.compile: {fewer} of {len(pairs)} sweeps; "
             f"total compile time over all sweeps {ours:.1f} s vs torch.compile's {theirs:.1f} s."]
    hits = (results.get("dynamic_hits") or {}).get("hit_cost") or []
    for hit in hits:
        ratio = hit["bytegraph_dynamic_overhead_s"] / hit["bytegraph_static_overhead_s"]
        lines.append(f"- Cache hit on a dynamic entry, {hit['case']}: {ratio:.2f}x a static one "
                     f"({'met' if ratio <= 1.5 else 'missed'}, goal 1.5x).")
    return lines
