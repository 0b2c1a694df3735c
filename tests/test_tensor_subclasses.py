"""Tensor subclasses with `__torch_function__`, traced through their override as torch.compile
does: the override is inlined (its side effects replayed after the graph), the graph holds plain
ops and runs with subclass dispatch off, and results get their class back."""

import pytest
import torch
import torch.nn.functional as F

import bytegraph
from bytegraph.testing import CompileCounterWithBackend
from tests._capture import breaks


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


calls = []


class Logged(torch.Tensor):
    """Logs each function it sees, then lets torch.Tensor's override run it."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        calls.append(func.__name__)
        return super().__torch_function__(func, types, args, kwargs)


class Plain(torch.Tensor):
    """Keeps torch.Tensor's own override: results are Plain too."""


def sigmoids(x):
    x = F.sigmoid(x)
    x = x.sigmoid()
    return x * 2 + 1


def graph_calls(counter):
    return [[node.target for node in gm.graph.nodes if node.op.startswith("call_")] for gm in counter.graphs]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_the_override_is_traced_once_and_its_effects_replayed(backend):
    x = torch.randn(4).as_subclass(Logged)
    calls.clear()
    expected = sigmoids(x)
    eager_calls = list(calls)
    assert eager_calls == ["sigmoid", "sigmoid", "mul", "add"]  # what torch hands on for * and +

    counter = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(sigmoids, backend=counter, fullgraph=True)
    for _ in range(3):  # each call: the override's effects once, none at trace or guard time
        calls.clear()
        out = compiled(x)
        assert calls == eager_calls
        assert type(out) is Logged
        torch.testing.assert_close(out.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))
    assert counter.frame_count == 1
    assert counter.op_count == 4


def test_default_override_keeps_the_class_and_the_graph_plain():
    x = torch.randn(3).as_subclass(Plain)
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(sigmoids, backend=counter, fullgraph=True)
    out = compiled(x)
    assert type(out) is Plain and type(sigmoids(x)) is Plain
    torch.testing.assert_close(out.as_subclass(torch.Tensor), sigmoids(x).as_subclass(torch.Tensor))
    assert counter.op_count == 4


class Passing(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs)


def test_a_plain_tensor_or_another_class_recompiles():
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(sigmoids, backend=counter)
    base = torch.randn(3)
    for x in (base.as_subclass(Passing), base, base.as_subclass(Plain), base.as_subclass(Passing)):
        out = compiled(x)
        assert type(out) is type(sigmoids(x))
    assert counter.frame_count == 3  # one per class; the fourth call is a cache hit


class Scaled(torch.Tensor):
    """An override that changes what ops compute: each result is doubled."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        result = super().__torch_function__(func, types, args, kwargs)
        if func is torch.Tensor.add or func is torch.add:
            result = super().__torch_function__(torch.Tensor.mul, types, (result, 2), {})
        return result


def test_an_override_that_changes_results():
    def f(x, y):
        return torch.add(x, y).relu()

    x, y = torch.randn(5).as_subclass(Scaled), torch.randn(5)
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    out, expected = compiled(x, y), f(x, y)
    assert type(out) is type(expected) is Scaled
    torch.testing.assert_close(out.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))
    assert graph_calls(counter)[0].count(torch.Tensor.mul) == 1  # the doubling is in the graph


class Reshaping(torch.Tensor):
    """Logs each attribute torch hands it (its getter's descriptor name) and answers x.shape
    with the shape it would have flattened."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if name == "__get__":
            name = func.__self__.__name__
        calls.append(name)
        result = super().__torch_function__(func, types, args, kwargs)
        return torch.Size([result.numel()]) if name == "shape" else result


def test_attribute_reads_dispatch_through_the_override():
    def f(x):
        return x.T * x.shape[0] + x.sum()

    x = torch.randn(3, 2).as_subclass(Reshaping)
    calls.clear()
    expected = f(x)
    eager_calls = list(calls)
    assert eager_calls == ["T", "shape", "mul", "sum", "add"]
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    for _ in range(2):
        calls.clear()
        out = compiled(x)
        assert calls == eager_calls and type(out) is Reshaping
        torch.testing.assert_close(out.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))
    assert counter.frame_count == 1


class Unwrapping(torch.Tensor):
    """The other common shape of an override: run func with dispatch off, wrap tensors."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        calls.append(func.__name__)
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
        return out.as_subclass(cls) if isinstance(out, torch.Tensor) else out


def test_an_override_that_disables_dispatch_and_wraps_itself():
    def f(x, y):
        z = torch.cat([x, y], dim=0)
        return z.relu().sum(dim=0, keepdim=True)

    x, y = torch.randn(2, 3).as_subclass(Unwrapping), torch.randn(1, 3)
    calls.clear()
    expected = f(x, y)
    eager_calls = list(calls)
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    calls.clear()
    out = compiled(x, y)
    assert calls == eager_calls == ["cat", "relu", "sum"]
    assert type(out) is Unwrapping
    torch.testing.assert_close(out.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))
    assert counter.op_count == 3


def test_dispatch_switched_off_in_the_program():
    def f(x):
        with torch._C.DisableTorchFunctionSubclass():
            y = x + 1  # a plain tensor: no override runs
        return y * 2

    x = torch.randn(3).as_subclass(Logged)
    calls.clear()
    expected = f(x)
    assert calls == [] and type(expected) is torch.Tensor
    out = bytegraph.compile(f, backend="eager", fullgraph=True)(x)
    assert calls == [] and type(out) is torch.Tensor
    torch.testing.assert_close(out, expected)


def test_as_subclass_in_the_program_gives_the_class():
    def f(x):
        y = (x + 1).as_subclass(Plain)
        return y * 2, type(y) is Plain

    counter = CompileCounterWithBackend("eager")
    out, is_plain = bytegraph.compile(f, backend=counter, fullgraph=True)(torch.ones(2))
    assert is_plain and type(out) is Plain
    torch.testing.assert_close(out.as_subclass(torch.Tensor), torch.full((2,), 4.0))
    assert counter.op_count == 2  # as_subclass itself is no op


def test_a_break_between_overridden_ops():
    def one_break(x):
        x = F.sigmoid(x)
        bytegraph.graph_break()
        return x.sigmoid()

    x = torch.randn(2).as_subclass(Logged)
    calls.clear()
    expected = one_break(x)
    eager_calls = list(calls)
    counter = CompileCounterWithBackend("eager")
    calls.clear()
    out = bytegraph.compile(one_break, backend=counter)(x)
    assert calls == eager_calls == ["sigmoid", "sigmoid"]
    assert type(out) is Logged  # the value crossing the break kept its class
    torch.testing.assert_close(out.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))
    assert counter.frame_count == 2 and counter.op_count == 2


# ---- wrapper subclasses (__tensor_flatten__): compiled for their metadata, which is guarded ----


class ScaledTensor(torch.Tensor):
    """A wrapper subclass whose value is inner * scale; `scale` is flatten metadata."""

    @staticmethod
    def __new__(cls, inner, scale):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)

    def __init__(self, inner, scale):
        self.inner = inner
        self.scale = scale

    def __tensor_flatten__(self):
        return ["inner"], {"scale": self.scale}

    @staticmethod
    def __tensor_unflatten__(inner_tensors, metadata, outer_size, outer_stride):
        return ScaledTensor(inner_tensors["inner"], metadata["scale"])

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda t: t.inner * t.scale if isinstance(t, ScaledTensor) else t  # noqa: E731
        return func(*torch.utils._pytree.tree_map(unwrap, args),
                    **torch.utils._pytree.tree_map(unwrap, kwargs or {}))


def plus_one(x):
    return x + 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_wrapper_subclass_metadata_is_guarded(backend, caplog):
    counter = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(plus_one, backend=counter)
    two, three = ScaledTensor(torch.ones(2), 2.0), ScaledTensor(torch.ones(2), 3.0)
    torch.testing.assert_close(compiled(two), plus_one(two))
    torch.testing.assert_close(compiled(ScaledTensor(torch.ones(2), 2.0)), plus_one(two))  # same metadata
    assert counter.frame_count == 1
    with caplog.at_level("INFO", logger="bytegraph.recompiles"):
        torch.testing.assert_close(compiled(three), plus_one(three))  # was stale under aot_eager
    assert counter.frame_count == 2
    assert "subclass metadata" in caplog.text


def test_wrapper_subclass_inner_tensor_layout_is_guarded():
    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(plus_one, backend=counter)
    a = ScaledTensor(torch.ones(2), 2.0)
    b = ScaledTensor(torch.ones(4)[::2], 2.0)  # same outer tensor, inner strided
    for x in (a, b, a, b):
        torch.testing.assert_close(compiled(x), plus_one(x))
    assert counter.frame_count == 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_torchs_two_tensor_is_captured_whole(backend):
    from torch.testing._internal.two_tensor import TwoTensor

    def f(x):
        return (x * 2).sin()

    counter = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    for _ in range(2):
        x = TwoTensor(torch.randn(3), torch.randn(3))
        out, expected = compiled(x), f(x)
        assert type(out) is TwoTensor
        torch.testing.assert_close(out.a, expected.a)
        torch.testing.assert_close(out.b, expected.b)
    assert counter.frame_count == 1 and counter.op_count == 2


def test_an_override_added_or_replaced_after_compiling_recompiles():
    class Later(torch.Tensor):  # torch.Tensor's own override at first
        pass

    class Replaced(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return super().__torch_function__(func, types, args, kwargs)

    def doubled(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {})) * 2

    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(plus_one, backend=counter)
    later, replaced = torch.ones(2).as_subclass(Later), torch.ones(2).as_subclass(Replaced)
    for x in (later, replaced):
        torch.testing.assert_close(compiled(x).as_subclass(torch.Tensor), torch.full((2,), 2.0))
    Later.__torch_function__ = classmethod(doubled)
    Replaced.__torch_function__ = classmethod(doubled)
    for x in (later, replaced):
        out = compiled(x)
        assert type(out) is torch.Tensor and type(plus_one(x)) is torch.Tensor
        torch.testing.assert_close(out, torch.full((2,), 4.0))  # the new override, not a stale graph
    assert counter.frame_count == 4


def _two_tensor_subclasses():
    """A subclass of torch's TwoTensor with a method and a property of its own (its unflatten
    makes its own class, so its fake is one), and one whose unflatten is TwoTensor's (its fake
    is a TwoTensor)."""
    from torch.testing._internal.two_tensor import TwoTensor

    class Pair(TwoTensor):
        def doubled(self):
            return self * 2

        @property
        def total(self):
            return self.sum()

        @staticmethod
        def __tensor_unflatten__(inner_tensors, metadata, outer_size, outer_stride):
            return Pair(inner_tensors["a"], inner_tensors["b"], outer_size, outer_stride)

    class BaseUnflatten(TwoTensor):
        pass

    return Pair, BaseUnflatten


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_wrapper_subclasss_own_methods_and_properties_are_inlined(backend):
    Pair, _ = _two_tensor_subclasses()

    def f(x):
        y = x.doubled() + x.total
        # An op on a wrapper subclass has the class its dispatch gives (the fake's class).
        return y + 1 if isinstance(y, Pair) else y - 1

    counter = CompileCounterWithBackend(backend)
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    x = Pair(torch.randn(3), torch.randn(3))
    for _ in range(2):
        out, expected = compiled(x), f(x)
        assert type(out) is type(expected) is Pair
        torch.testing.assert_close((out.a, out.b), (expected.a, expected.b))
    assert (counter.frame_count, counter.op_count) == (1, 4)


def test_a_wrapper_subclasss_method_patched_after_compiling_recompiles():
    Pair, _ = _two_tensor_subclasses()
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(lambda x: x.doubled(), backend=counter)
    x = Pair(torch.ones(2), torch.ones(2))
    torch.testing.assert_close(compiled(x).a, torch.full((2,), 2.0))
    Pair.doubled = lambda self: self * 3
    torch.testing.assert_close(compiled(x).a, torch.full((2,), 3.0))
    assert counter.frame_count == 2


def test_a_wrapper_subclass_faked_as_another_class_runs_eagerly():
    _, BaseUnflatten = _two_tensor_subclasses()

    def f(x):
        y = x * 2
        return y + 1 if type(y) is BaseUnflatten else y - 1

    x = BaseUnflatten(torch.ones(2), torch.ones(2))
    graphs, kinds = breaks(f, x)
    assert (graphs, kinds) == (0, ["unfakeable_tensor"])
    out = bytegraph.compile(f, backend="aot_eager")(x)
    assert type(out) is BaseUnflatten
    torch.testing.assert_close(out.a, torch.full((2,), 3.0))


@pytest.mark.parametrize("subclass", [Logged, Plain])
def test_a_torch_module_given_a_subclass_runs_its_forward_through_the_override(subclass):
    # A torch.nn module is otherwise one call_module node; given a subclass, its ops go through
    # the override as they do eagerly, so the result has the class the override gives.
    linear = torch.nn.Linear(3, 3)
    counter = CompileCounterWithBackend("eager")
    compiled = bytegraph.compile(lambda x: linear(x) + 1, backend=counter, fullgraph=True)
    x = torch.randn(2, 3).as_subclass(subclass)
    out, expected = compiled(x), linear(x) + 1
    assert type(out) is type(expected) is subclass
    torch.testing.assert_close(out.as_subclass(torch.Tensor), expected.as_subclass(torch.Tensor))
    assert counter.frame_count == 1
    assert "call_module" not in [node.op for node in counter.graphs[0].graph.nodes]


class _ParamSubclass(torch.nn.Parameter):
    pass


def _parameters_of_subclasses():
    from torch.testing._internal.two_tensor import TwoTensor

    return [_ParamSubclass(torch.randn(3, 3)),
            torch.nn.Parameter(TwoTensor(torch.randn(3, 3), torch.randn(3, 3)))]  # a low-precision weight's shape


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("which", [0, 1], ids=["parameter_subclass", "parameter_of_a_wrapper_subclass"])
def test_a_module_whose_weight_is_a_parameter_subclass_trains(backend, which):
    class Layer(torch.nn.Module):
        def __init__(self, weight):
            super().__init__()
            self.weight = weight

        def forward(self, x):
            return F.linear(x, self.weight).relu()

    weight = _parameters_of_subclasses()[which]
    layer, reference = Layer(weight), Layer(torch.nn.Parameter(weight.detach().clone()))
    counter = CompileCounterWithBackend(backend)
    x = torch.randn(2, 3)
    out, expected = bytegraph.compile(layer, backend=counter)(x), reference(x)
    assert type(out) is type(expected)
    out.sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(weight.grad, reference.weight.grad)
    assert counter.frame_count == 1
