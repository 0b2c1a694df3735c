"""Where tracing time goes: cProfile over bytegraph's tracer (bytegraph._C.trace.trace).

The tracer alone, as the per-op benchmark times it: a cold compile would also run the graph
for real, whose kernels would blur the picture. cProfile sees Python functions and calls of
C functions; the self time of the call into the tracer (`trace`) is its C++ work outside
the Python callbacks it makes (cProfile books it to the calling function). Self times are summed by where the code lives, and the top
functions are listed.
"""

import cProfile
import pstats

import torch

CATEGORIES = [
    # cProfile does not see calls of nanobind functions: the tracer's own C++ time shows as
    # the self time of its caller, trace_once, which does nothing else.
    ("bytegraph C++ core (self time of the trace call)", lambda f, n: n == "trace_once"),
    ("torch C++ (ops, dispatch; called from Python)", lambda f, n: f == "~" and "torch" in n),
    ("bytegraph Python (bridge, compile path)", lambda f, n: "/bytegraph/" in f),
    ("FakeTensor / dispatch Python (torch/_subclasses, _ops, _prims, utils)",
     lambda f, n: any(p in f for p in ("/torch/_subclasses/", "/torch/_ops.py", "/torch/_prims", "/torch/utils/",
                                      "/torch/_refs/", "/torch/_decomp/", "/torch/_meta_registrations.py",
                                      "/torch/fx/experimental/", "/torch/_library/", "/torch/_higher_order_ops/"))),
    ("torch.fx graph building", lambda f, n: "/torch/fx/" in f),
    ("other torch Python (nn modules, functional)", lambda f, n: "/torch/" in f),
    ("Python builtins and stdlib", lambda f, n: True),
]


def phases(stats, total):
    """Cumulative time of the tracer's phases, from the bridge callbacks the C++ core makes.

    The floor of benchmark 3 is the "ops on fakes" phase alone (less the bridge's own cost).
    """

    from bytegraph import _bridge

    def entry(function):
        code = function.__code__
        return stats.stats.get((code.co_filename, code.co_firstlineno, code.co_name))

    def cumulative(function):
        found = entry(function)
        return found[3] if found else 0.0

    # fake_input is called by the C++ core for inputs (no Python caller is recorded) and from
    # inside run_op for the parameters of leaf modules (a Python caller): the latter are
    # counted as faking, not as running ops.
    fake_input = entry(_bridge.Session.fake_input)
    params_in_ops = sum(caller[3] for caller in fake_input[4].values()) if fake_input else 0.0
    mode = cumulative(_bridge.Session.__init__)
    faking = cumulative(_bridge.Session.fake_input)
    ops = cumulative(_bridge.Session.run_op) - params_in_ops
    graph = cumulative(_bridge.build_graph_module)
    rows = [
        ("make the FakeTensorMode (Session.__init__)", mode),
        ("fake the inputs and parameters (Session.fake_input)", faking),
        ("run the ops on fakes (Session.run_op, less parameter faking)", ops),
        ("build the torch.fx GraphModule (build_graph_module)", graph),
    ]
    rows.append(("the rest: C++ interpretation, guards, other bridge calls", total - sum(t for _, t in rows)))
    return rows


def _category(filename, name):
    for label, matches in CATEGORIES:
        if matches(filename, name):
            return label
    return CATEGORIES[-1][0]


def profile_trace(fn, args, kwargs, *, repeats=10, top=20):
    from bytegraph._C import trace as _trace

    def trace_once():
        with torch.no_grad():
            _trace.trace(fn, tuple(args), dict(kwargs))

    trace_once()  # warm-up, not profiled
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeats):
        trace_once()
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = sum(entry[2] for entry in stats.stats.values())
    by_category = {}
    rows = []
    for (filename, line, name), (cc, ncalls, tottime, cumtime, callers) in stats.stats.items():
        label = _category(filename, name)
        by_category[label] = by_category.get(label, 0.0) + tottime
        where = name if filename == "~" else f"{_short(filename)}:{line}({name})"
        rows.append((tottime, ncalls, cumtime, where))
    rows.sort(reverse=True)
    return {
        "repeats": repeats,
        "total_s": total,
        "phases": phases(stats, total),
        "by_category": sorted(((label, seconds) for label, seconds in by_category.items()),
                              key=lambda item: -item[1]),
        "top": [{"self_s": t, "calls": n, "cumulative_s": c, "function": w} for t, n, c, w in rows[:top]],
    }


def _short(filename):
    for marker in ("/site-packages/", "/bench/", "/lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename
