"""functools.partial, functools.wraps-decorated functions and operator.itemgetter /
attrgetter in traced code: calls through them are inlined like direct calls."""

import functools
import operator

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from tests._capture import capture


# A fresh cache per test, each compiled call checked against eager (conftest.py).
pytestmark = pytest.mark.usefixtures("verified")


def _affine(x, scale, shift=0.0, *, power=1):
    return (x * scale + shift) ** power


def test_partials_made_in_the_trace():
    def f(x):
        double = functools.partial(_affine, scale=2.0)
        shifted = functools.partial(double, shift=1.0)          # flattened, as CPython does
        cube = functools.partial(_affine, x, 1.0, power=3)
        assert shifted.func is _affine and shifted.keywords == {"scale": 2.0, "shift": 1.0}
        return double(x) + shifted(x, shift=3.0) + cube() + len(cube.args)

    capture(f, torch.ones(2), ops=12)


def test_a_partial_argument_is_guarded_by_its_function_and_arguments():
    def f(x, fn):
        return fn(x) + 1

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.ones(2)
    for fn in (functools.partial(_affine, scale=2.0), functools.partial(_affine, scale=2.0)):
        torch.testing.assert_close(compiled(x, fn), f(x, fn))
    assert counter.frame_count == 1  # a new partial of the same function and arguments
    for fn in (functools.partial(_affine, scale=3.0), functools.partial(_affine, shift=1.0, scale=2.0),
               functools.partial(lambda x, scale: x - scale, scale=2.0)):
        torch.testing.assert_close(compiled(x, fn), f(x, fn))
    assert counter.frame_count == 4  # each differs in what the call relies on


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 2

    return wrapper


@_logged
def _decorated(x, k=1):
    return x + k


def test_functools_wraps_decorated_functions_are_inlined():
    def f(x):
        assert _decorated.__wrapped__ is not None
        return _decorated(x, k=3) + _decorated(x)

    assert _decorated.__name__ == "_decorated"
    capture(f, torch.ones(2), ops=5)


_second = operator.itemgetter(1)
_pair = operator.itemgetter(0, 2)
_dims = operator.attrgetter("shape", "dtype.is_floating_point")


def test_itemgetter_and_attrgetter():
    def f(x):
        table = {"w": x * 2, "b": 1}
        weight = operator.itemgetter("w")(table)
        a, c = _pair((x, None, x + 1))
        shape, floating = _dims(x)
        name_of = operator.attrgetter("__name__")
        return weight + _second([0, a]) + c + len(shape) + floating + len(name_of(_affine))

    capture(f, torch.ones(2), ops=7)


@pytest.mark.parametrize("name", ["func", "args", "keywords", "__call__", "__name__", "__qualname__", "__globals__"])
def test_hasattr_on_a_partial_made_in_the_trace_is_what_its_class_gives_instances(name):
    # A partial has no __name__ of its own: the class's __name__ is the metaclass's, not an
    # instance attribute.
    def f(x):
        p = functools.partial(_affine, scale=2.0)
        return p(x) if hasattr(p, name) else x - 1

    capture(f, torch.ones(2), ops=3 if name in ("func", "args", "keywords", "__call__") else 1)


def test_hasattr_on_a_list_does_not_see_the_class_own_name():
    def f(x):
        items = [x]
        return x + 1 if hasattr(items, "__name__") else x - 1

    capture(f, torch.ones(2), ops=1)


def test_functools_wraps_and_contextmanager_on_functions_made_in_the_trace():
    import contextlib
    import functools

    def f(x):
        def inner(y):
            "doc of inner"
            return y * 2

        @functools.wraps(inner)
        def wrapper(y):
            return inner(y) + 1

        @contextlib.contextmanager
        def scaled(v):
            try:
                yield v.sin()
            finally:
                pass

        with scaled(x) as s:
            z = s.cos()
        return wrapper(x) + z, wrapper.__name__, wrapper.__doc__, wrapper.__wrapped__ is inner, wrapper.__module__

    capture(f, torch.ones(2), ops=5)


def test_a_returned_closure_sees_what_the_trace_stored_in_its_cells():
    def f(x):
        def inner(y):
            return y * 2

        def wrapper(y):
            return inner(y) + 1

        return wrapper(x), wrapper

    counter = CompileCounter()
    out = bytegraph.compile(f, backend=counter, fullgraph=True)(torch.ones(2))
    torch.testing.assert_close(out[0], f(torch.ones(2))[0])
    torch.testing.assert_close(out[1](torch.ones(1)), torch.full((1,), 3.0))  # it read `inner` from its cell
    assert counter.frame_count == 1


def test_functools_reduce_runs_in_the_trace():
    def f(x, ys):
        total = functools.reduce(operator.add, ys)
        product = functools.reduce(lambda a, b: a * b, (t.sum() for t in ys), x)
        try:
            functools.reduce(operator.add, [])
        except TypeError as error:
            message = str(error)
        return total, product, functools.reduce(max, [3, 1, 4]), message

    capture(f, torch.ones(2), [torch.ones(2), torch.full((2,), 2.0)], ops=5)


_runs = []


@functools.lru_cache
def _cached_double(x):
    """doubles"""
    return x * 2


@functools.cache
def _cached_setup(n):
    _runs.append(n)  # an effect the cache makes happen once per argument
    return n + 1


def test_an_lru_cache_wrapper_inlines_its_function_with_a_warning(recwarn):
    def f(x):
        assert _cached_double.__name__ == "_cached_double" and _cached_double.__doc__ == "doubles"
        return _cached_double(x) + 1, hasattr(_cached_double, "extra")

    capture(f, torch.ones(2), ops=2)
    assert any("lru_cache" in str(w.message) and "_cached_double" in str(w.message) for w in recwarn)


def test_an_lru_cache_on_constant_arguments_is_answered_by_the_cache():
    # The cached function runs once for 3, as it does eagerly: at trace time, then never again.
    _runs.clear()

    def f(x):
        return x * _cached_setup(3)

    capture(f, torch.ones(2), ops=1, calls=3)
    assert _runs == [3]


def test_an_attribute_added_to_an_lru_cache_wrapper_after_the_trace_is_seen():
    def f(x):
        return x + 1 if hasattr(_cached_double, "extra") else x - 1

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = torch.ones(2)
    assert torch.equal(compiled(x), x - 1)
    _cached_double.extra = True
    try:
        assert torch.equal(compiled(x), x + 1)
    finally:
        del _cached_double.extra
    assert counter.frame_count == 2


def test_nested_functions_annotated_with_typing_constructs_and_pytree_tree_map():
    import typing
    from collections.abc import Callable

    import torch.utils._pytree as pytree

    T = typing.TypeVar("T")

    def f(x, tree):
        def scale(v: Callable[[T], typing.Any] | None = None, *, by: list[int] | None = None) -> typing.Optional[T]:
            return v * 2

        mapped = pytree.tree_map(scale, tree)
        only = pytree.tree_map_only(torch.Tensor, lambda t: t + 1, {"a": x, "b": 3})
        return mapped, only, scale.__annotations__["v"] == (Callable[[T], typing.Any] | None)

    capture(f, torch.ones(2), {"a": torch.ones(2), "b": [torch.zeros(1), torch.ones(3)]})
