"""NumPy code on tensors in traced frames: `x.numpy()`, NumPy's functions, an array's methods,
attributes and operators become graph nodes computed with torch._numpy; arrays the frame returns
are ndarrays again."""

import numpy as np
import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter
from tests._capture import breaks


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


def _same(expected, actual):
    if isinstance(expected, (tuple, list)):
        return type(expected) is type(actual) and all(_same(e, a) for e, a in zip(expected, actual, strict=True))
    if isinstance(expected, np.ndarray):
        return type(actual) is np.ndarray and expected.dtype == actual.dtype and np.allclose(expected, actual)
    if isinstance(expected, torch.Tensor):
        return torch.allclose(expected, actual) and expected.dtype == actual.dtype
    return type(expected) is type(actual) and expected == actual


def _captured(fn, *args, ops):
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    for _ in range(2):
        expected, actual = fn(*args), compiled(*args)
        assert _same(expected, actual), (expected, actual)
    assert counter.frame_count == 1 and counter.op_count == ops, counter


def test_array_metadata_and_arrays_back_to_tensors():
    def f(x):
        a = x.numpy()
        return a.shape, a.ndim, a.size, a.itemsize, a.strides, a.dtype, torch.from_numpy(a.T), torch.as_tensor(a.real)

    _captured(f, torch.randn(3, 4), ops=2)


def test_numpy_functions_methods_and_operators_on_an_array():
    def f(x):
        a = x.numpy()
        mean = np.mean(a, 1)
        return a + a * 2, a.max(axis=0), a.reshape([1, a.size]), a[0], np.linalg.norm(a, axis=1), mean, np.sin(a)

    _captured(f, torch.randn(3, 4), ops=8)


def test_numpy_functions_of_scalars_fold_and_numpy_random_stays_outside():
    def f(x):
        return x * np.sqrt(4.0)

    _captured(f, torch.randn(3), ops=1)

    def draws(x):
        return x + np.random.rand()  # NumPy's generator: a new number on each call

    assert breaks(draws, torch.randn(3))[1]
    compiled = bytegraph.compile(draws, backend="eager")
    x = torch.zeros(3)
    assert not torch.equal(compiled(x), compiled(x))


def test_numpy_of_a_tensor_that_requires_grad_raises_as_eagerly():
    def f(x):
        try:
            x.numpy()
        except RuntimeError as error:
            return x + 1, str(error)
        return x, ""

    counter = CompileCounter()
    x = torch.randn(2, requires_grad=True)
    result, expected = bytegraph.compile(f, backend=counter, fullgraph=True)(x), f(x)
    assert result[1] == expected[1] and "requires grad" in expected[1]
    assert torch.equal(result[0], expected[0]) and counter.frame_count == 1
