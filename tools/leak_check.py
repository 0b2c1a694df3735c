"""Memory over long runs: cache hits, and compile/reset cycles, must not grow the process.

    PYTHONPATH=. python tools/leak_check.py [--hits 1000000] [--cycles 10000]

Prints resident memory (RSS) and the count of live Python objects after a warm-up and at the
end of each phase; exits non-zero when either grew by more than the allowed slack.
"""

import argparse
import gc
import linecache
import resource
import sys
import weakref

import torch

import bytegraph
from bytegraph.testing import CompileCounter


def rss_mb():
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def live_objects():
    # torch.fx keeps each generated GraphModule's source in linecache (for tracebacks), as it
    # does under torch.compile: not bytegraph's to free, so not counted.
    linecache.clearcache()
    gc.collect()
    return len(gc.get_objects())


def step(x, y):
    z = x * y
    if z.sum() > 0:  # a break: the resume function's entry is hit too
        z = z + 1
    return z.relu()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.linear(x).relu() * 2


def hits(count):
    compiled = bytegraph.compile(step, backend=CompileCounter())
    x, y = torch.ones(4), torch.ones(4)
    for _ in range(1000):
        compiled(x, y)
    before = rss_mb(), live_objects()
    for _ in range(count):
        compiled(x, y)
    return before, (rss_mb(), live_objects())


def cycles(count):
    models = weakref.WeakSet()  # the tool's own bookkeeping must not grow either

    def one():
        model = Block()
        bytegraph.compile(model, backend=CompileCounter())(torch.ones(2, 8))
        models.add(model)
        bytegraph.reset()

    for _ in range(50):
        one()
    before = rss_mb(), live_objects()
    for _ in range(count):
        one()
    gc.collect()
    alive = len(models)
    return before, (rss_mb(), live_objects()), alive


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hits", type=int, default=1_000_000)
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument("--slack-mb", type=float, default=20.0)
    parser.add_argument("--slack-objects", type=int, default=2000)
    args = parser.parse_args(argv)
    ok = True
    with torch.no_grad():
        (rss0, obj0), (rss1, obj1) = hits(args.hits)
        print(f"{args.hits} cache hits: RSS {rss0:.1f} -> {rss1:.1f} MiB, live objects {obj0} -> {obj1}")
        ok &= rss1 - rss0 <= args.slack_mb and obj1 - obj0 <= args.slack_objects
        (rss0, obj0), (rss1, obj1), alive = cycles(args.cycles)
        print(f"{args.cycles} compile/reset cycles: RSS {rss0:.1f} -> {rss1:.1f} MiB, live objects {obj0} -> {obj1}, "
              f"models still alive after reset: {alive}")
        ok &= rss1 - rss0 <= args.slack_mb and obj1 - obj0 <= args.slack_objects and alive == 0
    print("ok" if ok else "GROWTH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
