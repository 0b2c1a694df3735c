"""Shared helpers for the tracer tests: trace, run the graph, compare with eager."""

import dis

import torch

from bytegraph import _bridge
from bytegraph._C import trace as _trace


def _probe():
    return print()


# Whether this interpreter pushes the call protocol's NULL after the callable (3.13+), as
# its own disassembly of a call to a global says ("print + NULL", not "NULL + print").
NULL_AFTER_CALLABLE = any(i.opname == "LOAD_GLOBAL" and i.argrepr.endswith("+ NULL")
                          for i in dis.get_instructions(_probe))


def call_prefix(callable_repr):
    """The stack entries a call starts with, in this interpreter's order: the callable and
    the NULL (the symbolic stack shows it as NullVariable)."""
    return [callable_repr, "NullVariable"] if NULL_AFTER_CALLABLE else ["NullVariable", callable_repr]


def trace(fn, *args, **kwargs):
    return _trace.trace(fn, args, kwargs)


def source_resolver(fn, args, kwargs):
    """Evaluates a source's name (`L['xs'][0]`, `G['w']`, `closure['k']`) for the call fn(*args, **kwargs)."""
    function, arguments = _bridge.bind_arguments(fn, args, kwargs)
    code = function.__code__
    closure = {name: cell.cell_contents for name, cell in zip(code.co_freevars, function.__closure__ or ())}
    namespace = {"L": arguments, "G": function.__globals__, "closure": closure}
    return lambda name: eval(name, namespace)


def run_traced(result, resolve_source=None):
    outputs = result.graph_module(*result.example_inputs)
    return _bridge.rebuild_output(result.output, outputs, resolve_source)


def assert_same(actual, expected):
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"expected a tensor, got {type(actual)}"
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        torch.testing.assert_close(actual, expected)
    elif isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and list(actual) == list(expected)
        for key in expected:
            assert_same(actual[key], expected[key])
    else:
        assert actual == expected


def check(fn, *args, **kwargs):
    """Traces fn, runs the graph on the example inputs and compares with running fn eagerly."""
    result = trace(fn, *args, **kwargs)
    with torch.no_grad():
        expected = fn(*args, **kwargs)
        actual = run_traced(result, source_resolver(fn, args, kwargs))
    assert_same(actual, expected)
    return result


def nodes(result, op=None):
    return [n for n in result.graph_module.graph.nodes if op is None or n.op == op]


def targets(result, op):
    return [n.target for n in nodes(result, op)]


class GradSwitch:
    """A hand-written grad-mode context manager (torch._C._set_grad_enabled on enter and exit)."""

    def __init__(self, mode):
        self.prev = torch.is_grad_enabled()
        self.mode = mode

    def __enter__(self):
        torch._C._set_grad_enabled(self.mode)

    def __exit__(self, *exc):
        torch._C._set_grad_enabled(self.prev)
