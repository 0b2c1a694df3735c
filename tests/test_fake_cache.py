"""Fakes of parameters and inputs kept across static traces (bytegraph/_fake_cache.py): reused
while the real tensor is unchanged, never when its metadata changed."""

import gc
import threading

import torch
from torch import nn

import bytegraph
from bytegraph import _fake_cache
from bytegraph._C import trace as _trace
from bytegraph.testing import CompileCounter, same


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))
        self.register_buffer("offset", torch.randn(4))

    def forward(self, x):
        return x @ self.weight + self.offset


def _example_value(result, target):
    for node in result.graph_module.graph.nodes:
        if node.target == target or node.name == target:
            return node.meta["example_value"]
    raise AssertionError(f"no node {target!r}")


def test_a_second_trace_reuses_the_fakes_of_unchanged_parameters():
    module = Scaled()
    x = torch.randn(2, 4)
    first = _trace.trace(module.forward, (x,), {})
    second = _trace.trace(module.forward, (x,), {})
    assert _example_value(second, "self_weight") is _example_value(first, "self_weight")
    assert _example_value(second, "self_offset") is _example_value(first, "self_offset")


def test_data_updates_in_place_keep_the_fake():
    module = Scaled()
    x = torch.randn(2, 4)
    first = _trace.trace(module.forward, (x,), {})
    with torch.no_grad():
        module.weight.add_(1.0)  # an optimizer step: values change, metadata does not
    second = _trace.trace(module.forward, (x,), {})
    assert _example_value(second, "self_weight") is _example_value(first, "self_weight")


def _changes():
    """(what changed, how) for each metadata change a fake must follow."""
    def swap_data(module):
        module.weight.data = torch.randn(4, 4).t()

    def transpose_in_place(module):
        with torch.no_grad():
            module.weight.t_()

    def freeze(module):
        module.weight.requires_grad_(False)

    def new_dtype(module):
        module.weight.data = module.weight.data.double()
        module.offset = module.offset.double()

    def gains_a_grad(module):
        module.weight.grad = torch.zeros(4, 4)

    return [swap_data, transpose_in_place, freeze, new_dtype, gains_a_grad]


def test_metadata_changes_give_new_fakes_that_match_the_tensor():
    for change in _changes():
        module = Scaled()
        x = torch.randn(2, 4)
        first = _trace.trace(module.forward, (x,), {})
        old = _example_value(first, "self_weight")
        change(module)
        if module.weight.dtype == torch.float64:
            x = x.double()
        second = _trace.trace(module.forward, (x,), {})
        fake = _example_value(second, "self_weight")
        real = module.weight
        assert fake is not old, change.__name__
        assert (fake.dtype, fake.shape, fake.stride(), fake.requires_grad) == (
            real.dtype, real.shape, real.stride(), real.requires_grad), change.__name__
        output = _example_value(second, "add")
        assert output.dtype == real.dtype, change.__name__


class Accumulates(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Linear(4, 4)
        self.register_buffer("total", torch.zeros(4))

    def forward(self, x):
        before = self.total * 1
        self.total += self.w(x).sum(0)  # in place: the buffer's fake now requires grad
        x.t_()  # in place on the input's fake: sizes (2, 4) -> (4, 2)
        return before, x.sum(1)


def test_in_place_ops_of_a_trace_do_not_leak_into_the_next_traces_fakes():
    module = Accumulates()
    x = torch.randn(2, 4)
    for _ in range(2):
        result = _trace.trace(module.forward, (x,), {})
        assert not _example_value(result, "before").requires_grad
        assert _example_value(result, "sum_2").shape == (4,)
    assert x.shape == (2, 4) and not module.total.requires_grad  # traced, never run


def test_compiled_results_follow_a_parameter_swapped_for_another_layout():
    module = Scaled()
    counter = CompileCounter()
    compiled = bytegraph.compile(module, backend=counter)
    x = torch.randn(2, 4)
    assert same(module(x), compiled(x))
    module.weight.data = torch.randn(4, 4).t().contiguous().t()  # same shape, other strides
    assert same(module(x), compiled(x))
    module.weight.data = torch.randn(4, 4, dtype=torch.float64)
    module.offset = module.offset.double()
    assert same(module(x.double()), compiled(x.double()))
    assert counter.frame_count >= 2  # the dtype change recompiled


def test_a_symbolic_trace_takes_the_mode_for_itself():
    shared = _fake_cache.shared()
    module = Scaled()
    counter = CompileCounter()
    compiled = bytegraph.compile(module, backend=counter, dynamic=True)
    x = torch.randn(3, 4)
    assert same(module(x), compiled(x))
    assert counter.frame_count == 1
    assert shared.retired and _fake_cache.shared() is not shared
    assert _fake_cache.shared().mode.shape_env is None


def test_fakes_go_with_their_tensors_and_with_reset():
    shared = _fake_cache.shared()
    module = Scaled()
    _trace.trace(module.forward, (torch.randn(2, 4),), {})
    before = len(shared)
    del module
    gc.collect()
    assert len(shared) <= before - 2
    bytegraph.reset()
    assert _fake_cache.shared() is not shared


def test_each_thread_has_its_own_mode():
    modes = []

    def record():
        modes.append(_fake_cache.shared().mode)

    thread = threading.Thread(target=record)
    thread.start()
    thread.join()
    assert modes[0] is not _fake_cache.shared().mode
