"""Jagged-layout NestedTensors (torch.nested.nested_tensor(..., layout=torch.jagged)) under bytegraph.

A NestedTensor is traced as torch.compile traces it: a tensor (a traceable wrapper subclass,
faked from its inner tensors with its ragged size a symbol of the trace's ShapeEnv), whose own
`__torch_function__` is part of each op (run on its fake while tracing and on the tensor when
the graph runs), so the graph holds the ops as the program called them. Its guards: its class
and flatten metadata, its tensor metadata with the ragged size and the strides it scales left
unchecked (a nested int holds no number), and its inner tensors (values, offsets, the min/max
sequence-length tensors), whose sizes the shape guards check. A new NestedTensor of the same
structure reuses the graph; a changed structure recompiles as torch.compile does.
"""

import pytest
import torch
import torch.nn.functional as F

import bytegraph
from bytegraph.exc import GraphBreakError
from bytegraph.testing import CompileCounterWithBackend
from tests._capture import RunCounter

pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py

# Two calls of one structure (new NestedTensor objects), the same batch with other lengths,
# another total length, then other batch sizes.
LENGTHS = [[2, 3], [2, 3], [4, 1], [1, 6], [5, 1, 4], [3, 3, 3, 3]]
WIDTH = 4


def jagged(lengths, seed=0, requires_grad=False):
    generator = torch.Generator().manual_seed(seed)
    return torch.nested.nested_tensor([torch.randn(n, WIDTH, generator=generator) for n in lengths],
                                      layout=torch.jagged, requires_grad=requires_grad)


def _linear():
    torch.manual_seed(0)
    return torch.nn.Linear(WIDTH, 3)


WEIGHT = torch.randn(3, WIDTH, generator=torch.Generator().manual_seed(1))
LINEAR = _linear()


def pointwise(nt):
    return (nt * 2).sin() + 1


def linear(nt):
    return F.linear(nt, WEIGHT)


def module(nt):
    return LINEAR(nt)


def softmax(nt):
    return torch.softmax(nt, dim=-1)


def row_sums(nt):
    return nt.sum(dim=-1)


def values(nt):
    return nt.values()


def scaled_values(nt):
    return nt.values() * 2


def cosines_of_components(nt):
    return [t.cos() for t in nt.unbind()]


def offsets(nt):
    return nt.offsets() + 1


FUNCTIONS = [pointwise, linear, module, softmax, row_sums, values, scaled_values, cosines_of_components, offsets]
# The ones captured whole (fullgraph=True), one op or more on the NestedTensor; unbind() reads
# the offsets' values (a break, as for any data-dependent op).
WHOLE = [pointwise, linear, module, softmax, row_sums, values, scaled_values, offsets]


def _comparable(value):
    if isinstance(value, torch.Tensor) and value.is_nested:
        return list(value.unbind())
    if isinstance(value, (list, tuple)):
        return [_comparable(item) for item in value]
    return value


def _frames_over_lengths(fn, backend):
    """Compiles fn, calls it on one NestedTensor of each of LENGTHS, checks each result against
    eager; the graphs compiled by the end of each call."""
    counter = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(fn, backend=counter)
    frames = []
    for seed, lengths in enumerate(LENGTHS):
        nt = jagged(lengths, seed)
        torch.testing.assert_close(_comparable(compiled(nt)), _comparable(fn(nt)))
        frames.append(counter.frame_count)
    return frames


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda fn: fn.__name__)
def test_results_equal_eager_for_every_ragged_structure(fn, backend):
    _frames_over_lengths(fn, backend)


def _torch_compile_frames_over_lengths(fn, dynamic=None):
    from torch._dynamo.testing import CompileCounterWithBackend as DynamoCounter

    torch._dynamo.reset()
    counter = DynamoCounter("eager")
    compiled = torch.compile(fn, backend=counter, dynamic=dynamic)
    frames = []
    try:
        for seed, lengths in enumerate(LENGTHS):
            compiled(jagged(lengths, seed))
            frames.append(counter.frame_count)
    finally:
        torch._dynamo.reset()
    return frames


@pytest.mark.parametrize("dynamic", [None, True])
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda fn: fn.__name__)
def test_recompiles_no_more_than_torch_compile(fn, dynamic):
    # Over LENGTHS: reused for a new object of one structure, recompiled when the shortest
    # sequence turns 1 (specialised) and for each new batch size, as torch.compile is
    # (statically: the same counts; with dynamic=True torch.compile also recompiles where duck
    # sizing equated the weight's size with the batch's, which bytegraph does not here).
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(fn, backend=counter, dynamic=dynamic)
    frames = []
    for seed, lengths in enumerate(LENGTHS):
        nt = jagged(lengths, seed)
        torch.testing.assert_close(_comparable(compiled(nt)), _comparable(fn(nt)))
        frames.append(counter.frame_count)
    reference = _torch_compile_frames_over_lengths(fn, dynamic)
    assert frames[0] == reference[0] == 1  # the first call is captured by both
    if dynamic is None:
        assert frames == reference
    else:
        assert all(ours <= theirs for ours, theirs in zip(frames, reference)), (frames, reference)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", WHOLE, ids=lambda fn: fn.__name__)
def test_nested_tensor_ops_are_captured_in_one_graph(fn, backend):
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm

    counter = RunCounter(capture if backend == "eager" else backend)
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    for seed in range(2):
        nt = jagged([2, 3], seed)
        torch.testing.assert_close(_comparable(compiled(nt)), _comparable(fn(nt)))
    # One graph, which ran on both calls (no fallback to the uncompiled frame).
    assert (counter.frame_count, counter.runs) == (1, 2) and counter.op_count >= 1
    if graphs:
        placeholders = [node.meta["example_value"] for node in graphs[0].graph.nodes if node.op == "placeholder"]
        assert any(isinstance(value, torch.Tensor) and value.is_nested for value in placeholders)


def test_the_graph_holds_the_ops_as_called_and_reads_inner_tensors_in_it():
    codes = []

    def capture(gm, example_inputs):
        codes.append(gm.code)
        return gm

    def fn(nt):
        return (nt * 2).sin(), nt.offsets() + 1

    compiled = bytegraph.compile(fn, backend=capture, fullgraph=True)
    nt = jagged([2, 3])
    torch.testing.assert_close(_comparable(compiled(nt)), _comparable(fn(nt)))
    (code,) = codes
    assert "l_nt_ * 2" in code and ".sin()" in code
    assert "l_nt_._offsets" in code  # read in the graph, not a graph input of its own


def test_a_new_nested_tensor_of_the_same_structure_reuses_the_graph():
    def fn(nt, x):
        return nt * x.sin().sum()

    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(fn, backend=counter)
    for seed in range(3):
        nt, x = jagged([2, 3], seed), torch.randn(3)
        torch.testing.assert_close(_comparable(compiled(nt, x)), _comparable(fn(nt, x)))
    assert (counter.frame_count, counter.op_count) == (1, 3)


def test_the_graph_keeps_running_past_the_cache_size_limit():
    counter = RunCounter("eager")
    compiled = bytegraph.compile(scaled_values, backend=counter)
    calls = bytegraph.config.cache_size_limit + 4
    for seed in range(calls):
        nt = jagged([2, 3], seed)
        torch.testing.assert_close(compiled(nt), scaled_values(nt))
    assert (counter.frame_count, counter.runs) == (1, calls)


@pytest.mark.parametrize("changed", ["transposed", "requires_grad", "width", "dtype"])
def test_each_property_the_graph_depends_on_is_guarded(changed):
    def fn(nt):
        return nt.sin() * 2

    def make(seed):
        nt = jagged([2, 3], seed, requires_grad=changed == "requires_grad" and seed == 1)
        if seed == 1 and changed == "transposed":
            nt = nt.transpose(1, 2)  # ragged dimension 2: other flatten metadata
        if seed == 1 and changed == "width":
            nt = torch.nested.nested_tensor([torch.randn(n, WIDTH + 1) for n in (2, 3)], layout=torch.jagged)
        if seed == 1 and changed == "dtype":
            nt = nt.double()
        return nt

    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(fn, backend=counter)
    for seed in range(2):
        nt = make(seed)
        torch.testing.assert_close(_comparable(compiled(nt)), _comparable(fn(nt)))
    assert counter.frame_count == 2


def test_a_nested_tensor_made_in_the_frame_is_captured():
    def fn(values, offsets):
        nt = torch.nested.nested_tensor_from_jagged(values, offsets)
        return (nt * 2).values()

    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    values, offsets = torch.randn(5, WIDTH), torch.tensor([0, 2, 5])
    torch.testing.assert_close(compiled(values, offsets), fn(values, offsets))
    assert (counter.frame_count, counter.op_count) == (1, 3)


def test_plain_tensor_code_beside_a_nested_tensor_is_captured():
    def fn(nt, x):
        y = x.sin() * 2
        return nt * y.sum(), y

    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    nt, x = jagged([2, 3]), torch.randn(3)
    torch.testing.assert_close(_comparable(compiled(nt, x)), _comparable(fn(nt, x)))
    assert (counter.frame_count, counter.op_count) == (1, 4)


class _Traced(torch.Tensor):
    """A plain subclass whose override the tracer models: its graphs run with subclass dispatch off."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_nested_tensor_beside_a_modelled_override_runs_eagerly():
    # The NestedTensor's override must run with its op; the other subclass's graph runs with
    # subclass dispatch off. One graph cannot do both: the frame breaks there.
    def fn(nt, x):
        return nt * 2, x + 1

    nt, x = jagged([2, 3]), torch.randn(3).as_subclass(_Traced)
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(fn, backend=counter)
    actual, expected = compiled(nt, x), fn(nt, x)
    torch.testing.assert_close(_comparable(actual), _comparable(expected))
    assert type(actual[1]) is _Traced
    with pytest.raises(GraphBreakError, match="runs with the op"):
        bytegraph.compile(lambda nt, x: (nt * 2, x + 1), backend="eager", fullgraph=True)(nt, x)


def test_an_op_on_a_nested_tensor_with_subclass_dispatch_off_runs_eagerly():
    def fn(nt):
        with torch._C.DisableTorchFunctionSubclass():
            return nt * 3

    nt = jagged([2, 3])
    with pytest.raises(GraphBreakError, match="subclass dispatch off"):
        bytegraph.compile(fn, backend="eager", fullgraph=True)(nt)
    torch.testing.assert_close(_comparable(bytegraph.compile(fn, backend="eager")(nt)), _comparable(fn(nt)))


def test_inductor_compiles_a_nested_tensor_graph():
    counter = CompileCounterWithBackend("inductor")
    compiled = bytegraph.compile(pointwise, backend=counter)
    for seed in range(2):
        nt = jagged([2, 3], seed)
        torch.testing.assert_close(_comparable(compiled(nt)), _comparable(pointwise(nt)))
    assert (counter.frame_count, counter.op_count) == (1, 3)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_training_a_linear_on_a_nested_tensor_gives_eager_gradients(backend):
    expected_module, compiled_module = _linear(), _linear()
    counter = RunCounter(backend)
    compiled = bytegraph.compile(compiled_module, backend=counter)
    for seed, lengths in enumerate(LENGTHS[:3]):
        nt_expected = jagged(lengths, seed, requires_grad=True)
        nt_actual = jagged(lengths, seed, requires_grad=True)
        expected_module(nt_expected).values().pow(2).sum().backward()
        compiled(nt_actual).values().pow(2).sum().backward()
        torch.testing.assert_close(nt_actual.grad.values(), nt_expected.grad.values())
    torch.testing.assert_close(compiled_module.weight.grad, expected_module.weight.grad)
    torch.testing.assert_close(compiled_module.bias.grad, expected_module.bias.grad)
    # Every call ran a graph (none fell back to eager): recompiled once, when the shortest
    # sequence turned 1.
    assert (counter.frame_count, counter.runs) == (2, 3)
