"""Compile-and-compare helper for the tests of Python constructs inside traced code."""

import bytegraph
from bytegraph.testing import CompileCounter, CompileCounterWithBackend, same


class RunCounter(CompileCounterWithBackend):
    """Counts the graphs compiled (frame_count) and how many times their compiled code ran (runs)."""

    def __init__(self, backend):
        super().__init__(backend)
        self.runs = 0

    def __call__(self, gm, example_inputs):
        compiled = super().__call__(gm, example_inputs)

        def run(*args):
            self.runs += 1
            return compiled(*args)

        return run


def compiled_with_counter(fn):
    """`fn` compiled with a counting backend, breaks allowed, and the counter."""
    counter = CompileCounter()
    return bytegraph.compile(fn, backend=counter), counter


def capture(fn, *args, ops=None, calls=2, **kwargs):
    """Compiles `fn` whole (fullgraph: any break raises) with a counting backend, calls it
    `calls` times on the same arguments and checks each result against eager. Asserts one
    graph (no recompile on the repeated calls) and, with `ops`, its op count. Returns the last
    result and the counter."""
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    for _ in range(calls):
        expected = fn(*args, **kwargs)
        actual = compiled(*args, **kwargs)
        assert same(expected, actual), f"{fn.__name__}: compiled {actual!r} != eager {expected!r}"
    assert counter.frame_count == 1, counter
    if ops is not None:
        assert counter.op_count == ops, counter
    return actual, counter


def breaks(fn, *args, **kwargs):
    """What bytegraph.explain reports for one call of `fn`: (graph count, [break kinds])."""
    output = bytegraph.explain(fn)(*args, **kwargs)
    return output.graph_count, [reason.kind for reason in output.break_reasons]
