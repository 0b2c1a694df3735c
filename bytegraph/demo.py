"""The main job: run the seeds' examples through bytegraph and show what each stage did.

`python -m bytegraph demo` prints, for each example, the bytecode bytegraph decoded, the graphs
it captured, the guards protecting them, graph breaks with their reasons, recompilations, and
timings against eager execution and torch.compile.
"""

import logging
import statistics
import sys
import time

import torch

import bytegraph
from bytegraph import _C, bytecode, examples
from bytegraph.testing import CompileCounter
from bytegraph.viewer.recorder import fx_graph_rows


def _heading(title):
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}")


def _median_call_us(fn, args, repeat=7, number=2000):
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        samples.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(samples)


class _ShowGraphs:
    """A backend that prints each graph it is given, then runs it as is."""

    def __init__(self):
        self.count = 0

    def __call__(self, gm, example_inputs):
        print(f"\n--- graph {self.count} handed to the backend ---")
        print(gm.print_readable(print_output=False).rstrip())
        self.count += 1
        return gm.forward


class _PrintHandler(logging.Handler):
    def emit(self, record):
        print(f"[{record.name}] {record.getMessage()}")


def show_bytecode():
    _heading("1. Decoding bytecode: the walkthrough's add(x, y)")
    print(bytecode.dis(examples.add.__code__))
    instructions = bytecode.decode(examples.add.__code__)
    rebuilt = bytecode.assemble(instructions, like=examples.add.__code__)
    print(f"re-assembled code is byte-identical: {rebuilt.co_code == examples.add.__code__.co_code}")


def show_net(x):
    _heading("2. The notebook's Net (Linear + relu): graph, guards, cache hits")
    model = examples.Net()
    exported = []
    compiled = bytegraph.optimize(_ShowGraphs(), guard_export_fn=exported.append)(model)
    out = compiled(x)
    print(f"\nresult equals eager: {torch.allclose(out, model(x))}")
    print("\nguards protecting the compiled code:")
    for line in exported[0]:
        print(f"  {line}")
    return model, compiled


def show_recompile(model, compiled, x):
    _heading("3. A guard fails: recompilation with its reason")
    handler = _PrintHandler()
    logger = logging.getLogger("bytegraph.recompiles")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        bigger = torch.randn(x.shape[0] + 3, x.shape[1])
        out = compiled(bigger)
        print(f"result equals eager: {torch.allclose(out, model(bigger))}")
    finally:
        logger.removeHandler(handler)


def show_slides_example():
    _heading("4. The slides' function: constants folded, then a branch on a tensor")
    a, b = torch.ones(2, 3), torch.ones(2, 3)
    result = _C.trace.trace(examples.slides_example, (a, b), {}, allow_graph_break=True)
    print(f"tracing stopped: {result.graph_break['kind']} at {result.graph_break['opname']} "
          f"(offset {result.graph_break['offset']}): {result.graph_break['message']}")
    print("graph captured before the break (a0 + a1 + a2 folded to the constant 3):")
    for row in fx_graph_rows(result.graph_module):
        print(f"  {row}")
    compiled = bytegraph.compile(examples.slides_example, backend="eager")
    for a_, b_ in ((a, b), (-a, b)):
        same = torch.equal(compiled(a_, b_), examples.slides_example(a_, b_))
        print(f"compiled result equals eager for a.sum()={a_.sum().item():+.0f}: {same}")


def show_breaks():
    _heading("5. The notebook's foo2: graph breaks at tensor branches, resume functions")
    handler = _PrintHandler()
    loggers = [logging.getLogger(name) for name in ("bytegraph.graph_breaks", "bytegraph.bytecode")]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    show = _ShowGraphs()
    try:
        compiled = bytegraph.compile(examples.foo2, backend=show)
        a, b = torch.ones(2, 3), torch.ones(2, 3)
        for sa, sb in ((1, 1), (-1, 1), (1, -1), (-1, -1)):
            print(f"\n>>> foo2 with signs a={sa:+d}, b={sb:+d}")
            out = compiled(sa * a, sb * b)
            print(f"result equals eager: {torch.equal(out, examples.foo2(sa * a, sb * b))}")
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    print(f"\ngraphs compiled for foo2 over the four sign combinations: {show.count}")
    try:
        bytegraph.compile(examples.foo1, backend="eager", fullgraph=True)(torch.ones(2), torch.ones(2))
    except bytegraph.exc.GraphBreakError as error:
        print(f"\nwith fullgraph=True the break is an error:\n{error}")


def show_timings(model, compiled, x):
    _heading("6. Timings (median of 7 runs)")
    with torch.no_grad():
        eager_us = _median_call_us(model, (x,))
        ours_us = _median_call_us(compiled, (x,))
        torch._dynamo.reset()
        theirs = torch.compile(model, backend="eager")
        theirs(x)
        theirs_us = _median_call_us(theirs, (x,))
        start = time.perf_counter()
        bytegraph.reset()
        fresh = bytegraph.compile(examples.Net(), backend="eager")
        fresh(x)
        ours_cold_ms = (time.perf_counter() - start) * 1e3
        torch._dynamo.reset()
        start = time.perf_counter()
        torch.compile(examples.Net(), backend="eager")(x)
        theirs_cold_ms = (time.perf_counter() - start) * 1e3
    print(f"Net, eager call:                          {eager_us:8.2f} us")
    print(f"Net, bytegraph cache hit (eager backend):  {ours_us:8.2f} us  (+{ours_us - eager_us:.2f} us)")
    print(f"Net, torch.compile cache hit (eager):      {theirs_us:8.2f} us  (+{theirs_us - eager_us:.2f} us)")
    print(f"Net, first call (trace + compile), bytegraph:     {ours_cold_ms:8.1f} ms")
    print(f"Net, first call (trace + compile), torch.compile: {theirs_cold_ms:8.1f} ms")


def show_inductor(x):
    _heading("7. The notebook's Net under the inductor backend")
    model = examples.Net()
    start = time.perf_counter()
    compiled = bytegraph.compile(model, backend="inductor")
    out = compiled(x)
    print(f"first call with inductor: {(time.perf_counter() - start):.1f} s; "
          f"result equals eager: {torch.allclose(out, model(x), atol=1e-5)}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    torch.manual_seed(0)
    print(f"bytegraph {bytegraph.__version__} on Python {sys.version.split()[0]}, torch {torch.__version__}")
    x = torch.randn(2, 128)
    show_bytecode()
    model, compiled = show_net(x)
    show_recompile(model, compiled, x)
    show_slides_example()
    show_breaks()
    show_timings(model, compiled, x)
    if "--no-inductor" not in argv:
        show_inductor(x)
    return 0
