"""Helpers for tests of bytegraph and of code compiled with it.

    counter = bytegraph.testing.CompileCounter()
    fn = bytegraph.compile(fn, backend=counter)
    fn(x)
    assert counter.frame_count == 1 and counter.op_count == 3
"""

import collections

import torch

from bytegraph import backends


def count_ops(gm):
    """Number of operation nodes (call_function, call_method, call_module) in a graph."""
    return sum(1 for node in gm.graph.nodes if node.op.startswith("call_"))


class CompileCounter:
    """A backend that counts the graphs it is given and their ops, then runs them eagerly."""

    def __init__(self):
        self.frame_count = 0
        self.op_count = 0

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += count_ops(gm)
        return gm.forward

    def clear(self):
        self.frame_count = 0
        self.op_count = 0

    def __repr__(self):
        return f"CompileCounter(frame_count={self.frame_count}, op_count={self.op_count})"


class CompileCounterWithBackend(CompileCounter):
    """Counts like CompileCounter, keeps every graph in `graphs`, then compiles with `backend`."""

    def __init__(self, backend):
        super().__init__()
        self.backend = backend
        self.compiler_name = f"CompileCounterWithBackend({backends.backend_name(backend)})"
        self._compiler_fn = backends.lookup_backend(backend)
        self.graphs = []

    def __call__(self, gm, example_inputs):
        super().__call__(gm, example_inputs)
        self.graphs.append(gm)
        return self._compiler_fn(gm, example_inputs)

    @property
    def inner_backend(self):
        return self._compiler_fn

    def clear(self):
        super().clear()
        self.graphs.clear()


def same(ref, res, *, rtol=1e-4, atol=1e-5, equal_nan=True, exact_dtype=True):
    """True when `res` matches `ref`: tensors close (allclose), containers matched item by item.

    Handles tensors, tuples, lists, deques, dicts (same keys), numbers (close), and anything else by ==.
    """
    if isinstance(ref, torch.Tensor):
        if not isinstance(res, torch.Tensor) or ref.shape != res.shape:
            return False
        if exact_dtype and ref.dtype != res.dtype:
            return False
        if ref.is_sparse or res.is_sparse:
            ref, res = ref.to_dense(), res.to_dense()
        if ref.dtype == torch.bool or not (ref.is_floating_point() or ref.is_complex()):
            return bool(torch.equal(ref, res.to(ref.dtype)))
        return bool(torch.allclose(ref, res.to(ref.dtype), rtol=rtol, atol=atol, equal_nan=equal_nan))
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, exact_dtype=exact_dtype)
    if isinstance(ref, collections.deque):
        return type(res) is type(ref) and ref.maxlen == res.maxlen and same(list(ref), list(res), **options)
    if isinstance(ref, (tuple, list)):
        return (
            isinstance(res, (tuple, list))
            and len(ref) == len(res)
            and all(same(a, b, **options) for a, b in zip(ref, res))
        )
    if isinstance(ref, dict):
        return (
            isinstance(res, dict)
            and ref.keys() == res.keys()
            and all(same(ref[key], res[key], **options) for key in ref)
        )
    if isinstance(ref, float) and isinstance(res, (int, float)):
        if ref != ref:
            return equal_nan and res != res
        return abs(ref - res) <= atol + rtol * abs(ref)
    return type(ref) is type(res) and ref == res


def _fresh_copy(value):
    """A copy of an argument for one of two runs: tensors cloned, containers rebuilt."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return type(value)(_fresh_copy(item) for item in value)
    if isinstance(value, dict):
        return {key: _fresh_copy(item) for key, item in value.items()}
    return value


def run_eager_and_compiled(fn, *args, backend="eager", fullgraph=False, **kwargs):
    """Run fn eagerly and compiled on separate copies of the arguments.

    Returns (eager_result, compiled_result). Tensor arguments are cloned for each run, so a
    function that mutates its inputs is compared fairly; other objects are shared.
    """
    from bytegraph.api import compile as compile_function

    eager_result = fn(*_fresh_copy(args), **_fresh_copy(kwargs))
    compiled = compile_function(fn, backend=backend, fullgraph=fullgraph)
    compiled_result = compiled(*_fresh_copy(args), **_fresh_copy(kwargs))
    return eager_result, compiled_result

