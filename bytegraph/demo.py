"""`python -m bytegraph demo`: a short guided tour of bytegraph on the seeds' examples.

Each section says in a line or two what happens and shows it as a table or a picture: the
bytecode bytegraph decodes, the graph of a whole model and the guards protecting it, a
recompile and its reason, constants folded before a tensor branch, graph breaks and the resume
functions they lead to, what compiling cost, and timings against eager and torch.compile.
`--bytecode` adds the full disassembly of every generated function; `--no-inductor` skips
the inductor section.
"""

import linecache
import logging
import statistics
import sys
import textwrap
import time

import torch

import bytegraph
from bytegraph import _C, _logging, _readable_code, bytecode, examples
from bytegraph.eval_frame import frame_hook

WIDTH = 78


def _heading(number, title, subtitle):
    heading = f"{number}. {title}" if number else title
    print(f"\n{heading}\n{'-' * WIDTH}\n{textwrap.fill(subtitle, WIDTH)}\n")


def _table(header, rows, indent="  "):
    cells = [list(map(str, header))] + [list(map(str, row)) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    print("\n".join(indent + line for line in lines))


def _check(label, ok):
    print(f"  {'✓' if ok else '✗'} {label}")


def _median_call_us(fn, args, repeat=5, number=1000):
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        samples.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(samples)


def show_bytecode():
    _heading(1, "Bytecode in, bytecode out", "The walkthrough's add(x, y), decoded by bytegraph's C++ "
             "decoder; everything bytegraph generates is assembled the same way.")
    instructions = bytecode.decode(examples.add.__code__)
    _table(["offset", "opname", "argument"], [(i.offset, i.opname, i.argrepr) for i in instructions])
    rebuilt = bytecode.assemble(instructions, like=examples.add.__code__)
    _check("re-assembled code is byte-identical to CPython's", rebuilt.co_code == examples.add.__code__.co_code)


def show_net(x):
    _heading(2, "A whole model, one graph", "The notebook's Net (Linear + relu) compiled with a counting "
             "backend: one graph of two ops, guarded by checks on the input and global state.")
    model = examples.Net()
    counter = bytegraph.testing.CompileCounterWithBackend("eager")
    exported = []
    compiled = bytegraph.optimize(counter, guard_export_fn=exported.append)(model)
    out = compiled(x)
    print(_indent(_logging.graph_table(counter.graphs[0])))
    print("\n  guards:")
    print(_indent("\n".join(exported[0]), "    "))
    compiled(x)
    print()
    _check("result equals eager", torch.allclose(out, model(x)))
    _check(f"second call ran the cached code (graphs compiled: {counter.frame_count})", counter.frame_count == 1)
    return model, compiled


def _indent(text, prefix="  "):
    return "\n".join(prefix + line for line in text.splitlines())


def show_recompile(model, compiled, x):
    _heading(3, "A guard fails: recompile, with the reason", "Five rows instead of two: the guard on "
             "x's size fails, and the recompiles log says which one.")
    bigger = torch.randn(x.shape[0] + 3, x.shape[1])
    bytegraph.set_logs(recompiles=True)
    try:
        with _logging.redirected_to(sys.stdout):
            out = compiled(bigger)
    finally:
        bytegraph.set_logs()
    _check("result equals eager", torch.allclose(out, model(bigger)))


def show_slides_example():
    _heading(4, "Constants folded, then a branch on a tensor", "The slides' function: a0 + a1 + a2 "
             "becomes the constant 3 at trace time; `if a.sum() > a3` needs a tensor's value.")
    a, b = torch.ones(2, 3), torch.ones(2, 3)
    result = _C.trace.trace(examples.slides_example, (a, b), {}, allow_graph_break=True)
    info = result.graph_break
    print(f"  tracing stopped at {info['opname']} (offset {info['offset']}): {info['kind']}")
    print("  graph before the break:")
    print(_indent(_logging.graph_table(result.graph_module), "    "))
    compiled = bytegraph.compile(examples.slides_example, backend="eager")
    same = all(torch.equal(compiled(a_, b), examples.slides_example(a_, b)) for a_ in (a, -a))
    print()
    _check("compiled result equals eager on both sides of the branch", same)


def _graph_ops(gm):
    return ", ".join(node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "?")
                     for node in gm.graph.nodes if node.op.startswith("call_"))


def _entry_of(code):
    hook = frame_hook()
    entries = hook.cache_entries(code)
    return entries[0]["keepalive"] if entries else None


def _break_tree(code, prefix="", last=True, top=True, lines=None):
    """Each compiled frame of foo2 (the function, then its resume functions, each with the
    line it resumes at) and its graph's ops: the picture of how foo2 was split."""
    lines = [] if lines is None else lines
    keepalive = _entry_of(code)
    graph = f"graph: {_graph_ops(keepalive[1])}" if keepalive is not None and keepalive[2] else "no graph"
    branch = "" if top else ("└─ " if last else "├─ ")
    continuation = _C.codegen.resume_continuation(code)
    source = ""
    if continuation is not None:
        line = _readable_code.line_at(continuation[0], continuation[1])
        source = "  " + linecache.getline(code.co_filename, line).strip() if line else ""
    lines.append(f"{prefix}{branch}{code.co_qualname}{source}".ljust(52) + f"[{graph}]")
    resumes = list(keepalive[3]) if keepalive is not None and len(keepalive) > 3 else []
    child_prefix = prefix if top else prefix + ("   " if last else "│  ")
    for i, resume in enumerate(resumes):
        _break_tree(resume, child_prefix, i == len(resumes) - 1, False, lines)
    return lines


def show_breaks(show_bytecode_too):
    _heading(5, "Graph breaks and resume functions", "The notebook's foo2 branches twice on tensor "
             "values. Each `if` ends a graph; the rest continues in a resume function named after foo2 "
             "and the line it resumes at, captured in turn. After the four sign combinations:")
    bytegraph.reset()
    counter = bytegraph.testing.CompileCounter()
    compiled = bytegraph.compile(examples.foo2, backend=counter)
    a = torch.ones(2, 3)
    same = True
    for sa, sb in ((1, 1), (-1, 1), (1, -1), (-1, -1)):
        same &= torch.equal(compiled(sa * a, sb * a), examples.foo2(sa * a, sb * a))
    print("\n".join("  " + line for line in _break_tree(examples.foo2.__code__)))
    if _readable_code.decompiler_reads_this_interpreter():
        print(f"\n  What runs instead of foo2 (decompiled), next to the original:\n")
        entry = frame_hook().cache_entries(examples.foo2.__code__)[0]
        print(_indent(_readable_code.source_and_original(entry["code"], examples.foo2.__code__), "    "))
    else:
        print("\n  (what runs instead of foo2 is shown as source where depyf reads this Python's bytecode;"
              "\n  here it is shown as bytecode: python -m bytegraph demo --bytecode)")
    print()
    _check(f"all four combinations equal eager ({counter.frame_count} graphs compiled)", same)
    if show_bytecode_too:
        for code in [examples.foo2.__code__, *_C.codegen.resume_codes()]:
            for cache_entry in frame_hook().cache_entries(code):
                print(f"\n--- {code.co_qualname}: original bytecode ---\n{bytecode.dis(code)}")
                print(f"--- {code.co_qualname}: generated bytecode ---\n{bytecode.dis(cache_entry['code'])}")
    else:
        print("  (the full bytecode: python -m bytegraph demo --bytecode)")
    try:
        bytegraph.compile(examples.foo1, backend="eager", fullgraph=True)(torch.ones(2), torch.ones(2))
    except bytegraph.exc.GraphBreakError as error:
        print("\n  With fullgraph=True a break is an error that points at the line:")
        print(_indent(str(error), "    "))


def show_compile_times():
    _heading(6, "What compiling cost", "bytegraph.compile_times(): each compile of foo2's frames, by phase.")
    print(_indent(bytegraph.compile_times()))


def show_timings(model, compiled, x):
    _heading(7, "Timings", "Median of 5 runs of 1000 calls; first calls include tracing and compiling.")
    with torch.no_grad():
        eager_us = _median_call_us(model, (x,))
        ours_us = _median_call_us(compiled, (x,))
        torch._dynamo.reset()
        theirs = torch.compile(model, backend="eager")
        theirs(x)
        theirs_us = _median_call_us(theirs, (x,))
        start = time.perf_counter()
        bytegraph.compile(examples.Net(), backend="eager")(x)
        ours_cold_ms = (time.perf_counter() - start) * 1e3
        torch._dynamo.reset()
        start = time.perf_counter()
        torch.compile(examples.Net(), backend="eager")(x)
        theirs_cold_ms = (time.perf_counter() - start) * 1e3
    _table(["Net, eager backend", "eager", "bytegraph", "torch.compile"], [
        ("call (cache hit), us", f"{eager_us:.2f}", f"{ours_us:.2f}", f"{theirs_us:.2f}"),
        ("overhead over eager, us", "", f"{ours_us - eager_us:+.2f}", f"{theirs_us - eager_us:+.2f}"),
        ("first call, ms", "", f"{ours_cold_ms:.1f}", f"{theirs_cold_ms:.1f}"),
    ])


def show_inductor(x):
    _heading(8, "The same model under inductor", "backend='inductor' (the default) generates C++ "
             "kernels; the first call compiles them.")
    model = examples.Net()
    start = time.perf_counter()
    out = bytegraph.compile(model, backend="inductor")(x)
    print(f"  first call: {time.perf_counter() - start:.1f} s")
    _check("result equals eager", torch.allclose(out, model(x), atol=1e-5))


def show_next_steps():
    _heading(None, "Next", "Try these on your own code:")
    _table(["command", "what it shows"], [
        ("python -m bytegraph run train.py", "a torch.compile program, compiled by bytegraph"),
        ("print(bytegraph.explain(fn)(*args))", "graphs, breaks with user lines, guards, generated code"),
        ("BYTEGRAPH_LOGS=graph_breaks,recompiles", "logs, with TORCH_LOGS' names"),
        ("BYTEGRAPH_TRACE=dir; python -m bytegraph report dir", "tlparse's report, linked to step-by-step pages"),
        ("python -m bytegraph trace f.py:fn --html out.html", "every interpreter step of one function"),
    ])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    logging.getLogger("bytegraph").setLevel(logging.ERROR)  # the tour prints what it shows itself
    torch.manual_seed(0)
    print(f"bytegraph {bytegraph.__version__}: a guided tour (Python {sys.version.split()[0]}, "
          f"torch {torch.__version__})")
    x = torch.randn(2, 128)
    show_bytecode()
    model, compiled = show_net(x)
    show_recompile(model, compiled, x)
    show_slides_example()
    show_breaks("--bytecode" in argv)
    show_compile_times()
    show_timings(model, compiled, x)
    if "--no-inductor" not in argv:
        show_inductor(x)
    show_next_steps()
    return 0
