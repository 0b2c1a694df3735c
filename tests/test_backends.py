"""Backends on GraphModules that Dynamo did not produce (torch.fx.symbolic_trace), with real inputs."""

import functools
import importlib.util
import logging

import pytest
import torch
import torch.fx

import bytegraph
from bytegraph import backends
from bytegraph.exc import BackendCompilerFailed, InvalidBackend
from bytegraph.testing import CompileCounter, CompileCounterWithBackend, count_ops, same


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(6, 16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, kernel_size=3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(4 * 4 * 4, 5)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.head(x.flatten(1))


class StructuredOutput(torch.nn.Module):
    """Returns a dict holding a list, a tensor and a constant: not a flat tuple."""

    def forward(self, x, y):
        s = x + y
        return {"sum": s, "parts": [s.sin(), x * 2], "scale": 3}


def traced(module):
    torch.manual_seed(0)
    module = module.eval()
    return module, torch.fx.symbolic_trace(module)


def mlp_case():
    module, gm = traced(MLP())
    return module, gm, [torch.randn(5, 6)]


def conv_case():
    module, gm = traced(ConvNet())
    return module, gm, [torch.randn(2, 3, 8, 8)]


CASES = {"mlp": mlp_case, "convnet": conv_case}


def check_against_eager(backend, case):
    module, gm, inputs = CASES[case]()
    compiled = backends.call_backend(backend, gm, inputs, f"{case}_graph")
    with torch.no_grad():
        expected = module(*inputs)
        actual = compiled(*inputs)
    assert same(expected, actual), f"{backend} on {case}"


# --- bytegraph's own backends ---------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_builtin_backend_matches_eager(backend, case):
    check_against_eager(backend, case)


def test_inductor_compiles_a_foreign_graph_on_cpu():
    # Inductor generates and compiles C++: one small graph only.
    check_against_eager("inductor", "mlp")


def test_eager_backend_returns_the_graph_forward():
    _, gm, inputs = mlp_case()
    assert backends.lookup_backend("eager")(gm, inputs) == gm.forward


def test_user_callable_receives_the_graph_and_real_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, example_inputs))
        return gm.forward

    _, gm, inputs = mlp_case()
    compiled = backends.call_backend(backend, gm, inputs, "mlp_graph")
    assert len(seen) == 1
    got_gm, got_inputs = seen[0]
    assert got_gm is gm
    assert len(got_inputs) == 1 and got_inputs[0] is inputs[0]
    assert type(got_inputs[0]) is torch.Tensor  # real, not a FakeTensor
    with torch.no_grad():
        assert same(gm(*inputs), compiled(*inputs))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_graph_with_structured_output_keeps_its_structure(backend):
    module = StructuredOutput()
    gm = torch.fx.symbolic_trace(module)
    x, y = torch.randn(3), torch.randn(3)
    compiled = backends.call_backend(backend, gm, [x, y], "structured")
    expected = module(x, y)
    actual = compiled(x, y)
    assert type(actual) is dict and list(actual) == ["sum", "parts", "scale"]
    assert type(actual["parts"]) is list
    assert actual["scale"] == 3
    assert same(expected, actual)


def test_tuple_output_rewrite_leaves_flat_tuple_graphs_alone():
    class TwoOutputs(torch.nn.Module):
        def forward(self, x):
            return x + 1, x * 2

    gm = torch.fx.symbolic_trace(TwoOutputs())
    assert backends.with_tuple_output(gm) == (gm, None)
    _, mlp_gm, inputs = mlp_case()
    rewritten, rebuild = backends.with_tuple_output(mlp_gm)
    assert rewritten is not mlp_gm
    result = rewritten(*inputs)
    assert isinstance(result, tuple) and len(result) == 1
    assert same(rebuild(result), mlp_gm(*inputs))


# --- every name in torch.compile's registry -------------------------------------------------


class _PassthroughMode(torch.utils._python_dispatch.TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


# Backends that need an argument beyond (gm, example_inputs) are called with it.
_EXTRA_ARGUMENTS = {
    "aot_eager_decomp_partition_with_mode": lambda: {"mode": _PassthroughMode()},
    "dynamo_minifier_backend": lambda: {"compiler_name": "eager"},
    "dynamo_accuracy_minifier_backend": lambda: {"compiler_name": "eager"},
}


def _torch_registry_names():
    import torch._dynamo

    # inductor has its own test: it compiles C++, so it runs on one graph only.
    return [name for name in torch._dynamo.list_backends(exclude_tags=()) if name != "inductor"]


def _skip_reason(name):
    if name in ("openxla", "openxla_eval") and importlib.util.find_spec("torch_xla") is None:
        return "torch_xla is not installed"
    if name == "tvm" and importlib.util.find_spec("tvm") is None:
        return "apache-tvm is not installed"
    return None


# TorchScript-based backends (ts, aot_ts) warn about their own deprecation.
@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
@pytest.mark.parametrize("name", _torch_registry_names())
def test_every_torch_registry_backend_accepts_a_foreign_graph(name, tmp_path, monkeypatch, capsys):
    reason = _skip_reason(name)
    if reason:
        pytest.skip(reason)
    monkeypatch.chdir(tmp_path)  # the minifier backends write repro scripts to the cwd
    backend = backends.lookup_backend(name)
    if name in _EXTRA_ARGUMENTS:
        backend = functools.partial(backend, **_EXTRA_ARGUMENTS[name]())
    module, gm, inputs = mlp_case()  # contains a relu, which the *_TESTING_ONLY backends target
    expected = module(*inputs)
    if name == "relu_compile_error_TESTING_ONLY":
        with pytest.raises(BackendCompilerFailed):
            backends.call_backend(backend, gm, inputs, "mlp_graph")
        return
    compiled = backends.call_backend(backend, gm, inputs, "mlp_graph")
    if name == "relu_runtime_error_TESTING_ONLY":
        with pytest.raises(Exception, match="ReluRuntimeError"):
            compiled(*inputs)
        return
    actual = compiled(*inputs)
    if name == "relu_accuracy_error_TESTING_ONLY":
        assert not same(expected, actual), "this backend deliberately miscompiles relu"
        return
    assert same(expected, actual)


# --- lookup, listing, errors ----------------------------------------------------------------


def test_list_backends_contains_the_main_backends_sorted():
    names = bytegraph.list_backends()
    assert {"eager", "aot_eager", "inductor"} <= set(names)
    assert names == sorted(names)


def test_list_backends_matches_torch_plus_our_own():
    import torch._dynamo

    assert set(torch._dynamo.list_backends()) <= set(bytegraph.list_backends())
    everything = bytegraph.list_backends(exclude_tags=())
    assert set(torch._dynamo.list_backends(exclude_tags=())) <= set(everything)
    assert len(everything) > len(bytegraph.list_backends())
    assert "relu_compile_error_TESTING_ONLY" not in bytegraph.list_backends()


def test_unknown_backend_name_lists_the_valid_names():
    with pytest.raises(ValueError) as info:
        backends.lookup_backend("no_such_backend")
    message = str(info.value)
    assert isinstance(info.value, InvalidBackend)
    assert "no_such_backend" in message
    for name in ("eager", "aot_eager", "inductor"):
        assert name in message


def test_non_callable_backend_is_a_type_error():
    with pytest.raises(TypeError, match="backend must be"):
        backends.lookup_backend(42)


def test_raising_backend_is_reported_with_backend_and_graph_names():
    def exploding_backend(gm, example_inputs):
        raise KeyError("boom")

    _, gm, inputs = mlp_case()
    with pytest.raises(BackendCompilerFailed) as info:
        backends.call_backend(exploding_backend, gm, inputs, "mlp_graph")
    error = info.value
    assert "exploding_backend" in str(error) and "mlp_graph" in str(error) and "boom" in str(error)
    assert error.backend_name == "exploding_backend" and error.graph_name == "mlp_graph"
    assert isinstance(error.__cause__, KeyError) and error.inner_exception is error.__cause__


def test_verbose_config_logs_each_compiled_graph(caplog):
    _, gm, inputs = mlp_case()
    with caplog.at_level(logging.INFO, "bytegraph"):
        backends.call_backend("eager", gm, inputs, "quiet_graph")
        with bytegraph.config.patch(verbose=True):
            backends.call_backend("eager", gm, inputs, "loud_graph")
    assert "quiet_graph" not in caplog.text
    assert "loud_graph" in caplog.text and "eager" in caplog.text and "fc1" in caplog.text


def test_backend_returning_a_non_callable_is_an_error():
    _, gm, inputs = mlp_case()
    with pytest.raises(BackendCompilerFailed, match="not callable"):
        backends.call_backend(lambda gm, inputs: 3, gm, inputs, "mlp_graph")


def test_register_backend_makes_a_name_usable():
    calls = []

    def recording(gm, example_inputs):
        calls.append(gm)
        return gm.forward

    backends.register_backend(recording, name="test_recording_backend", tags=("debug",))
    try:
        assert "test_recording_backend" in bytegraph.list_backends(exclude_tags=())
        assert "test_recording_backend" not in bytegraph.list_backends()
        _, gm, inputs = mlp_case()
        backends.call_backend("test_recording_backend", gm, inputs)
        assert calls == [gm]
        with pytest.raises(ValueError, match="already registered"):
            backends.register_backend(recording, name="test_recording_backend")
    finally:
        backends._OWN_BACKENDS.pop("test_recording_backend")


def test_fake_mode_is_made_the_ambient_tracing_context():
    from torch._guards import TracingContext
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake_mode = FakeTensorMode()
    seen = []

    def backend(gm, example_inputs):
        context = TracingContext.try_get()
        seen.append(context.fake_mode if context else None)
        return gm.forward

    _, gm, inputs = mlp_case()
    backends.call_backend(backend, gm, inputs, "g", fake_mode=fake_mode)
    backends.call_backend(backend, gm, inputs, "g")
    assert seen == [fake_mode, None]


def test_the_backend_fakes_inputs_as_they_were_before_the_traces_in_place_ops():
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake_mode = FakeTensorMode()
    real, weight = torch.ones(2), torch.ones(2, requires_grad=True)
    fake = fake_mode.from_tensor(real)
    with fake_mode:
        fake.add_(fake_mode.from_tensor(weight))  # what the trace did: the fake now requires grad
    assert fake.requires_grad
    seen = []

    def backend(gm, example_inputs):
        seen.append(fake_mode.from_tensor(example_inputs[0]))
        return gm.forward

    _, gm, _ = mlp_case()
    backends.call_backend(backend, gm, [real], "g", fake_mode=fake_mode)
    assert seen[0] is not fake and not seen[0].requires_grad and seen[0].shape == fake.shape


def test_torch_compilers_get_a_static_shape_env_for_a_static_trace():
    from torch._guards import TracingContext

    seen = []

    def probe(gm, example_inputs):
        fake_mode = TracingContext.try_get().fake_mode
        # The compilers fakify the real inputs again: the static fakes made up front are found.
        fake = fake_mode.from_tensor(example_inputs[0])
        seen.append((fake_mode.shape_env is not None, tuple(fake.shape), all(type(s) is int for s in fake.shape)))
        return gm.forward

    _, gm, inputs = mlp_case()
    compiled = backends.call_backend(backends.TorchBackend("probe", probe), gm, inputs, "g")
    assert seen == [(True, (5, 6), True)]
    assert same(compiled(*inputs), gm(*inputs))
    backends.call_backend(CompileCounter(), gm, inputs, "g")  # not a torch compiler: no context
    assert TracingContext.try_get() is None


def test_inductor_reuses_its_fx_graph_cache_for_a_static_trace(tmp_path, monkeypatch):
    from torch._dynamo.utils import counters

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))

    def scale_and_shift(x):
        return torch.relu(x * 3 + 1)

    x = torch.randn(4, 8)
    hits = []
    for _ in range(2):
        bytegraph.reset()
        counters.clear()
        assert same(bytegraph.compile(scale_and_shift, backend="inductor")(x), scale_and_shift(x))
        hits.append(counters["inductor"]["fxgraph_cache_hit"])
    bytegraph.reset()
    assert hits == [0, 1]


# --- inductor mode/options ------------------------------------------------------------------


def test_inductor_mode_and_options_become_config_patches():
    from torch._inductor import list_mode_options

    assert backends.inductor_config_patches("max-autotune") == list_mode_options("max-autotune", None)
    assert backends.inductor_config_patches(options={"max-autotune": True}) == {"max_autotune": True}
    with pytest.raises(ValueError, match="unknown inductor option"):
        backends.inductor_config_patches(options={"max_autotunez": True})
    with pytest.raises(TypeError, match="must be bool"):
        backends.inductor_config_patches(options={"max_autotune": "yes"})


# --- counting backends ----------------------------------------------------------------------


def test_compile_counter_counts_call_nodes_of_a_known_graph():
    _, gm, inputs = mlp_case()
    # symbolic_trace of MLP: x -> fc1 (call_module) -> relu (call_function) -> fc2 (call_module)
    assert [node.op for node in gm.graph.nodes] == [
        "placeholder",
        "call_module",
        "call_function",
        "call_module",
        "output",
    ]
    counter = CompileCounter()
    compiled = counter(gm, inputs)
    compiled = counter(gm, inputs)
    assert counter.frame_count == 2 and counter.op_count == 6
    assert compiled == gm.forward
    counter.clear()
    assert counter.frame_count == 0 and counter.op_count == 0


def test_compile_counter_counts_method_calls_too():
    def f(x):
        return x.sin().cos() + 1

    gm = torch.fx.symbolic_trace(f)
    assert count_ops(gm) == 3


def test_compile_counter_with_backend_counts_keeps_graphs_and_delegates():
    counter = CompileCounterWithBackend("aot_eager")
    module, gm, inputs = mlp_case()
    compiled = backends.call_backend(counter, gm, inputs, "mlp_graph")
    assert counter.frame_count == 1 and counter.op_count == 3 and counter.graphs == [gm]
    with torch.no_grad():
        assert same(module(*inputs), compiled(*inputs))
    counter.clear()
    assert counter.graphs == [] and counter.frame_count == 0


# --- input aliasing -------------------------------------------------------------------------


def test_a_graph_writing_in_place_is_rerun_as_captured_when_its_inputs_alias_otherwise():
    from bytegraph import _input_aliasing
    from bytegraph.testing import CompileCounterWithBackend

    def fn(a, t):
        t.zero_()
        return a.sum() + t.sum()

    counter = CompileCounterWithBackend("aot_eager")
    compiled = bytegraph.compile(fn, backend=counter)
    a = torch.ones(3, 4)
    assert float(compiled(a, a[0])) == 8.0 and float(a.sum()) == 8.0  # compiled for aliased inputs
    b, t = torch.ones(3, 4), torch.ones(4)
    assert float(compiled(b, t)) == 12.0 and float(t.sum()) == 0.0 and float(b.sum()) == 12.0
    assert counter.frame_count == 1  # same guards: the aliasing check, not a recompile, saved it
    assert _input_aliasing.pattern([a, a[0], 3, torch.ones(2)]) == (0, 0, -1, 3)
    assert _input_aliasing.writes_in_place(counter.graphs[0])


def test_a_graph_writing_nothing_in_place_is_not_wrapped():
    from bytegraph import _input_aliasing

    _, gm, inputs = mlp_case()
    assert not _input_aliasing.writes_in_place(gm)
    assert _input_aliasing.guarded(gm.forward, gm, inputs) == gm.forward
