"""What the interpreter's event stream costs: time per interpreted instruction of
`bytegraph._C.trace.trace` with nobody listening, and with a listener attached.

With nobody listening the interpreter's only extra work is one null-pointer test per
instruction (and one per frame); compare the first number against a build of the commit
before the stream existed (PYTHONPATH=that/checkout python tools/bench_record.py) to see
that it is lost in the noise.

    PYTHONPATH=. python tools/bench_record.py [--lines 2000] [--repeat 7]
"""

import argparse
import dis
import statistics
import time

import torch

from bytegraph._extension import _C


def straight_line_function(lines: int):
    """A function of `lines` constant additions: cheap instructions, where a per-step cost shows most."""
    body = "\n".join(f"    s = s + {i % 7}" for i in range(lines))
    scope = {}
    exec(f"def f(x):\n    s = 0\n{body}\n    return x * s\n", scope)
    return scope["f"]


class NullListener:
    """Receives every event and drops it: the cost of building and sending them."""

    def begin_frame(self, name, code, parent):
        return 0

    def step(self, *args):
        pass

    def end_frame(self, frame):
        pass

    def end_trace(self, graph_module, guards):
        pass


def best_time(fn, x, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        _C.trace.trace(fn, (x,), {})
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    fn = straight_line_function(options.lines)
    x = torch.ones(3)
    instructions = sum(1 for inst in dis.get_instructions(fn) if inst.opname != "CACHE")
    _C.trace.trace(fn, (x,), {})  # warm up: imports, fake-tensor machinery
    quiet_best, quiet_median = best_time(fn, x, options.repeat)
    print(f"{instructions} instructions")
    print(f"nobody listening:   best {quiet_best * 1e9 / instructions:8.1f} ns/instruction "
          f"(median {quiet_median * 1e9 / instructions:.1f})")
    record = getattr(_C, "record", None)
    if record is None:
        print("this build has no event stream (bytegraph._C.record)")
        return
    record.attach(NullListener())
    try:
        heard_best, heard_median = best_time(fn, x, options.repeat)
    finally:
        record.detach()
    print(f"a listener attached: best {heard_best * 1e9 / instructions:8.1f} ns/instruction "
          f"(median {heard_median * 1e9 / instructions:.1f})")


if __name__ == "__main__":
    main()
