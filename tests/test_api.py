"""The public API: compile/optimize forms, OptimizedModule, disable, reset, config, errors."""

import copy
import logging
import pickle
import threading

import pytest
import torch

import bytegraph
from bytegraph import _convert_frame, eval_frame
from bytegraph.testing import CompileCounter, run_eager_and_compiled, same


class FakeFrameHook:
    """Stands in for bytegraph._frame: records the thread's callback as the hook would see it."""

    def __init__(self):
        self._local = threading.local()
        self.reset_calls = 0
        self.skipped = []

    def set_callback(self, callback):
        previous = self.current()
        self._local.callback = callback
        return previous

    def current(self):
        return getattr(self._local, "callback", None)

    def reset(self):
        self.reset_calls += 1

    def mark_skip(self, code):
        self.skipped.append(code)

    def new_module_generation(self):
        pass

    def CapturedCall(self, fn, callback, verified_call, expected_outputs=-1, bad_outputs=None):  # noqa: N802
        """The hook's wrapper of a compiled function, setting this fake's callback instead."""
        def call(*args, **kwargs):
            previous = self.set_callback(callback)
            try:
                outputs = fn(*args, **kwargs)
            finally:
                self.set_callback(previous)
            if expected_outputs >= 0 and not (isinstance(outputs, (tuple, list)) and len(outputs) == expected_outputs):
                bad_outputs(outputs)
            return outputs
        return call


pytestmark = pytest.mark.usefixtures("fresh_cache")  # conftest.py


@pytest.fixture
def hook(monkeypatch):
    fake = FakeFrameHook()
    monkeypatch.setattr(eval_frame, "_frame", fake)
    return fake


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.drop = torch.nn.Dropout(0.5)
        self.fc2 = torch.nn.Linear(8, 2)
        self.register_buffer("scale", torch.tensor(2.0))
        self.note = "original"

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x)))) * self.scale


def add_one(x, y=1):
    """Adds y."""
    return x + y


# --- compile: forms and results -------------------------------------------------------------


def _compiled_graphs(fn):
    """The graph names of fn's cache entries: what the real hook captured for it."""
    return [entry["keepalive"][2] for entry in bytegraph._frame.cache_entries(fn.__code__) if entry["keepalive"]]


def test_compile_as_plain_call_preserves_metadata_and_results():
    compiled = bytegraph.compile(add_one, backend="eager")
    assert compiled is not add_one
    assert compiled.__name__ == "add_one" and compiled.__doc__ == "Adds y."
    assert compiled.__qualname__ == add_one.__qualname__ and compiled.__module__ == __name__
    assert compiled.__wrapped__ is add_one
    x = torch.randn(3)
    assert same(compiled(x, y=2), add_one(x, y=2))
    assert len(_compiled_graphs(add_one)) == 1


def test_compile_as_decorator_without_arguments():
    @bytegraph.compile
    def double(x):
        """Doubles."""
        return x * 2

    assert double.__name__ == "double" and double.__doc__ == "Doubles."
    assert same(double(torch.ones(2)), torch.full((2,), 2.0))
    assert len(_compiled_graphs(double.__wrapped__)) == 1


def test_compile_as_decorator_with_arguments():
    counter = CompileCounter()

    @bytegraph.compile(backend=counter, fullgraph=True)
    def shifted(x, shift=3):
        return x + shift

    x = torch.arange(4.0)
    assert same(shifted(x), x + 3)
    assert shifted.__name__ == "shifted"


def test_compiled_function_sets_the_thread_callback_only_while_running(hook):
    counter = CompileCounter()
    seen = []

    def probe(x):
        seen.append(hook.current())
        return x

    compiled = bytegraph.compile(probe, backend=counter, fullgraph=True, dynamic=False)
    assert hook.current() is None
    compiled(torch.ones(1))
    assert hook.current() is None
    (callback,) = seen
    assert isinstance(callback, _convert_frame.FrameConverter)
    assert callback.compiler_fn is counter and callback.options.fullgraph is True and callback.options.dynamic is False


def test_callback_is_restored_when_the_function_raises(hook):
    def fails(x):
        raise ValueError("user error")

    compiled = bytegraph.compile(fails, backend="eager")
    with pytest.raises(ValueError, match="user error"):
        compiled(1)
    assert hook.current() is None


def test_nested_compiled_functions_restore_the_outer_callback(hook):
    seen = {}

    def inner(x):
        seen["inner"] = hook.current()
        return x + 1

    compiled_inner = bytegraph.compile(inner, backend="eager")

    def outer(x):
        seen["outer_before"] = hook.current()
        y = compiled_inner(x)
        seen["outer_after"] = hook.current()
        return y

    bytegraph.compile(outer, backend="aot_eager")(torch.ones(1))
    assert seen["outer_before"] is seen["outer_after"]
    assert seen["inner"] is not seen["outer_before"]
    assert hook.current() is None


def test_compile_disable_returns_the_function_unchanged():
    assert bytegraph.compile(add_one, backend="eager", disable=True) is add_one
    module = MLP()
    assert bytegraph.compile(module, disable=True) is module


def test_config_disable_turns_compile_into_a_no_op():
    with bytegraph.config.patch(disable=True):
        assert bytegraph.compile(add_one, backend="eager") is add_one
        assert bytegraph.optimize("eager")(add_one) is add_one


def test_bytegraph_internal_code_is_recognised_and_skipped(hook):
    assert _convert_frame.is_internal_code(bytegraph.api.compile.__code__)
    assert _convert_frame.is_internal_code(eval_frame.call_with_callback.__code__)
    assert not _convert_frame.is_internal_code(add_one.__code__)
    # A finalizer the garbage collector runs inside a compiled function (fx's cached source of
    # a graph that died) was traced, and on a large linecache took minutes.
    from bytegraph import _fx_graph, demo
    assert _convert_frame.is_internal_code(_fx_graph._forget_source.__code__)
    assert not _convert_frame.is_internal_code(demo.show_bytecode.__code__)

    class InternalFrame:
        f_code = eval_frame.call_with_callback.__code__

    converter = _convert_frame.FrameConverter(CompileCounter())
    assert converter(InternalFrame()) is None
    assert hook.skipped == [eval_frame.call_with_callback.__code__]


# --- compile: argument checking -------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, text",
    [
        (dict(backend=3), TypeError, "backend must be"),
        (dict(backend="no_such_backend"), ValueError, "valid backend names are"),
        (dict(fullgraph="yes"), TypeError, "fullgraph must be a bool"),
        (dict(dynamic=1), TypeError, "dynamic must be a bool or None"),
        (dict(disable=None), TypeError, "disable must be a bool"),
        (dict(mode=1), TypeError, "mode must be a str"),
        (dict(mode="fastest"), ValueError, "unknown mode 'fastest'"),
        (dict(options=["max_autotune"]), TypeError, "options must be a dict"),
        (dict(mode="max-autotune", options={"max_autotune": True}), ValueError, "cannot both"),
        (dict(options={"no_such_option": 1}), ValueError, "unknown inductor option"),
        (dict(backend="eager", mode="max-autotune"), ValueError, "only supported by inductor-like"),
        (dict(backend="eager", options={"max_autotune": True}), ValueError, "only supported by inductor-like"),
    ],
)
def test_compile_rejects_bad_arguments(kwargs, error, text):
    with pytest.raises(error, match=text):
        bytegraph.compile(add_one, **kwargs)
    with pytest.raises(error, match=text):
        bytegraph.compile(**kwargs)  # the decorator form checks early too


def test_compile_rejects_a_non_callable_model():
    with pytest.raises(TypeError, match="function or nn.Module, got int"):
        bytegraph.compile(3)


@pytest.mark.parametrize("mode", ["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"])
def test_compile_accepts_every_torch_mode_for_inductor(mode):
    assert bytegraph.compile(add_one, mode=mode).__wrapped__ is add_one


def test_mode_and_options_reach_inductor_as_config_patches(hook):
    seen = []

    def probe(x):
        seen.append(hook.current().compiler_fn)
        return x

    bytegraph.compile(probe, options={"max_autotune": True})(1)
    bytegraph.compile(probe, mode="max-autotune-no-cudagraphs")(1)
    from torch._inductor import list_mode_options

    assert seen[0].config_patches == {"max_autotune": True}
    assert seen[1].config_patches == list_mode_options("max-autotune-no-cudagraphs", None)


def test_mode_and_options_pass_to_backends_that_take_them(hook):
    def tunable_backend(gm, example_inputs, mode=None, options=None):
        return gm.forward

    seen = []

    def probe(x):
        seen.append(hook.current().compiler_fn)
        return x

    bytegraph.compile(probe, backend=tunable_backend, options={"level": 3})(1)
    assert seen[0].keywords == {"options": {"level": 3}} and seen[0].func is tunable_backend


# --- OptimizedModule ------------------------------------------------------------------------


def test_optimized_module_forwards_the_module_api():
    torch.manual_seed(0)
    module = MLP()
    compiled = bytegraph.compile(module, backend="eager")
    assert isinstance(compiled, bytegraph.OptimizedModule) and isinstance(compiled, torch.nn.Module)
    assert compiled._orig_mod is module
    # the very same parameter objects, the original's state_dict keys
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in module.parameters()]
    assert list(compiled.state_dict()) == list(module.state_dict())
    assert dict(compiled.named_parameters()).keys() == dict(module.named_parameters()).keys()
    assert list(compiled.buffers())[0] is module.scale
    # attribute reads and writes go to the original
    assert compiled.note == "original" and compiled.fc1 is module.fc1
    compiled.note = "changed"
    assert module.note == "changed" and "note" not in compiled.__dict__
    compiled.extra = torch.nn.Linear(1, 1)
    assert module.extra is compiled.extra and "extra" in module._modules
    del compiled.extra
    assert not hasattr(module, "extra")
    assert repr(compiled) == f"OptimizedModule({module!r})"


def test_optimized_module_train_and_eval_propagate():
    module = MLP()
    compiled = bytegraph.compile(module, backend="eager")
    assert compiled.eval() is compiled
    assert not module.training and not module.fc1.training and not compiled.training
    compiled.train()
    assert module.training and module.drop.training and compiled.training
    module.eval()
    assert not compiled.training
    # eval mode: dropout off, so results are deterministic and equal the original's
    x = torch.randn(3, 4)
    assert same(compiled(x), module(x)) and same(compiled.forward(x), module(x))
    assert len(_compiled_graphs(MLP.forward)) == 1


def test_optimized_module_of_an_eval_module_stays_in_eval():
    module = MLP().eval()
    compiled = bytegraph.compile(module, backend="eager")
    assert not module.training and not compiled.training


def test_optimized_module_calls_the_original_hooks_once():
    module = MLP().eval()
    compiled = bytegraph.compile(module, backend="eager")
    calls = []
    compiled.register_forward_hook(lambda mod, args, out: calls.append(mod))
    compiled(torch.randn(1, 4))
    assert calls == [module]
    assert len(_compiled_graphs(MLP.forward)) == 1


def test_optimized_module_load_state_dict_and_parent_module_keys():
    source = MLP()
    target_module = MLP()
    compiled = bytegraph.compile(target_module, backend="eager")
    compiled.load_state_dict(source.state_dict())
    assert torch.equal(target_module.fc1.weight, source.fc1.weight)

    parent = torch.nn.Module()
    parent.body = bytegraph.compile(MLP(), backend="eager")
    reference = torch.nn.Module()
    reference.body = MLP()
    assert list(parent.state_dict()) == list(reference.state_dict())
    assert [name for name, _ in parent.named_parameters()] == [name for name, _ in reference.named_parameters()]
    parent.load_state_dict(reference.state_dict())
    assert torch.equal(parent.body.fc2.bias, reference.body.fc2.bias)


def test_optimized_module_moves_dtype_through_the_original():
    module = MLP()
    compiled = bytegraph.compile(module, backend="eager")
    assert compiled.double() is compiled
    assert module.fc1.weight.dtype == torch.float64


def test_optimized_module_of_a_sequential_supports_len_and_indexing():
    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    compiled = bytegraph.compile(module, backend="eager")
    assert len(compiled) == 2 and compiled[0] is module[0] and list(compiled) == list(module)
    assert bool(bytegraph.compile(MLP(), backend="eager"))


def test_optimized_module_pickles_and_deep_copies():
    module = MLP().eval()
    compiled = bytegraph.compile(module, backend="eager")
    restored = pickle.loads(pickle.dumps(compiled))
    copied = copy.deepcopy(compiled)
    x = torch.randn(2, 4)
    for other in (restored, copied):
        assert isinstance(other, bytegraph.OptimizedModule) and other._orig_mod is not module
        assert list(other.state_dict()) == list(module.state_dict())
        assert same(other(x), module(x))
    assert len(_compiled_graphs(MLP.forward)) == 2  # the module's identity is guarded


def test_optimized_module_class_and_module_walk_are_the_wrappers():
    # What fully_shard does to the module it shards: a subclass with its own methods, hooks,
    # and per-module state found again by walking the model's modules.
    module = MLP().eval()
    compiled = bytegraph.compile(module, backend="eager")
    marked = type("MarkedOptimizedModule", (type(compiled),), {"mark": lambda self: "marked"})
    compiled.__class__ = marked
    assert type(compiled) is marked and type(module) is MLP and compiled.mark() == "marked"
    parent = torch.nn.Sequential(compiled)
    assert [name for name, _ in parent.named_modules()] == ["", "0", "0.fc1", "0.drop", "0.fc2"]
    assert parent[0] is compiled and list(parent.modules())[1] is compiled
    assert list(compiled.modules())[1:] == list(module.modules())[1:]
    x = torch.randn(2, 4)
    assert same(compiled(x), module(x)) and len(_compiled_graphs(MLP.forward)) == 1


def test_compiling_an_optimized_module_wraps_the_original():
    module = MLP()
    twice = bytegraph.compile(bytegraph.compile(module, backend="eager"), backend="eager")
    assert twice._orig_mod is module


# --- optimize -------------------------------------------------------------------------------


def test_optimize_as_decorator():
    compiled = bytegraph.optimize("eager")(add_one)
    assert compiled.__wrapped__ is add_one
    assert same(compiled(torch.ones(2)), torch.full((2,), 2.0))
    assert len(_compiled_graphs(add_one)) == 1
    assert isinstance(bytegraph.optimize("eager")(MLP()), bytegraph.OptimizedModule)


def test_optimize_as_context_manager_sets_and_restores_the_callback(hook):
    seen = []

    def probe():
        seen.append(hook.current())

    counter = CompileCounter()
    context = bytegraph.optimize(counter, nopython=True)
    with context:
        probe()
        with bytegraph.optimize("eager"):
            probe()
        probe()
    probe()
    assert seen[0] is seen[2] and seen[0].compiler_fn is counter and seen[0].options.fullgraph
    assert seen[1] is not seen[0] and seen[3] is None
    # the same context object can be entered again, also from another thread
    with context:
        thread_seen = []
        worker = threading.Thread(target=lambda: thread_seen.append(hook.current()))
        worker.start()
        worker.join()
        assert hook.current() is seen[0]
    assert thread_seen == [None] and hook.current() is None


def test_optimize_context_manager_restores_on_exception(hook):
    with pytest.raises(KeyError):
        with bytegraph.optimize("eager"):
            raise KeyError("x")
    assert hook.current() is None


def test_optimize_disable_is_a_no_op(hook):
    context = bytegraph.optimize("eager", disable=True)
    assert context(add_one) is add_one
    with context:
        assert hook.current() is None


def test_optimize_rejects_bad_arguments():
    with pytest.raises(TypeError, match="nopython must be a bool"):
        bytegraph.optimize("eager", nopython=1)
    with pytest.raises(TypeError, match="guard_fail_fn must be callable"):
        bytegraph.optimize("eager", guard_fail_fn="print")
    with pytest.raises(ValueError, match="valid backend names"):
        bytegraph.optimize("nope")


def test_optimize_passes_guard_hooks_to_the_callback(hook):
    export, fail = print, repr
    seen = []

    @bytegraph.optimize("eager", guard_export_fn=export, guard_fail_fn=fail, dynamic=True)
    def probe():
        seen.append(hook.current())

    probe()
    assert seen[0].options.guard_export_fn is export and seen[0].options.guard_fail_fn is fail and seen[0].options.dynamic is True


# --- disable, graph_break, reset ------------------------------------------------------------


def test_disable_turns_capture_off_inside_a_compiled_function(hook):
    seen = {}

    @bytegraph.disable
    def opaque(x):
        """Opaque."""
        seen["disabled"] = hook.current()
        return x * 3

    def outer(x):
        seen["outer"] = hook.current()
        return opaque(x) + 1

    result = bytegraph.compile(outer, backend="eager")(torch.ones(1))
    assert same(result, torch.full((1,), 4.0))
    assert seen["outer"] is not None and seen["disabled"] is None
    assert opaque.__name__ == "opaque" and opaque.__doc__ == "Opaque."
    assert getattr(opaque, eval_frame.DISABLE_MARK) is True


def test_disable_non_recursive_marks_only_the_code(hook):
    def local_fn(x):
        return x

    assert bytegraph.disable(local_fn, recursive=False) is local_fn
    assert hook.skipped == [local_fn.__code__]
    assert eval_frame.is_skipped_code(local_fn.__code__)


def test_disable_as_context_manager_and_on_modules(hook):
    with bytegraph.optimize("eager"):
        with bytegraph.disable():
            assert hook.current() is None
        assert hook.current() is not None
    module = MLP().eval()
    x = torch.randn(1, 4)
    expected = module(x)
    assert bytegraph.disable(module) is module
    assert same(module(x), expected)
    with pytest.raises(TypeError):
        bytegraph.disable(5)


def test_graph_break_is_a_no_op_eagerly():
    assert bytegraph.graph_break() is None

    def with_break(x):
        x = x + 1
        bytegraph.graph_break()
        return x * 2

    eager, compiled = run_eager_and_compiled(with_break, torch.ones(2), backend="eager")
    assert same(eager, compiled) and same(eager, torch.full((2,), 4.0))


def test_reset_clears_the_frame_hook_cache(hook):
    bytegraph.reset()
    assert hook.reset_calls == 1


# --- config ---------------------------------------------------------------------------------


def test_config_defaults_and_validation():
    defaults = bytegraph.config.defaults()
    assert defaults["cache_size_limit"] == 8 and defaults["suppress_errors"] is False
    assert "verbose" in defaults
    with pytest.raises(AttributeError, match="no setting 'cache_limit'"):
        bytegraph.config.cache_limit = 3
    with pytest.raises(TypeError, match="must be int"):
        bytegraph.config.cache_size_limit = "8"
    with pytest.raises(TypeError, match="must be bool"):
        bytegraph.config.verbose = 1


def test_config_patch_restores_values():
    before = bytegraph.config.cache_size_limit

    @bytegraph.config.patch(cache_size_limit=2)
    def read():
        return bytegraph.config.cache_size_limit

    assert read() == 2 and bytegraph.config.cache_size_limit == before
    with bytegraph.config.patch(verbose=True):
        assert bytegraph.config.verbose is True
    assert bytegraph.config.verbose is False


# --- testing helpers ------------------------------------------------------------------------


def test_same_compares_nested_structures():
    a = torch.tensor([1.0, 2.0])
    assert same({"x": [a, (a, 3)]}, {"x": [a + 1e-7, (a.clone(), 3)]})
    assert not same({"x": [a]}, {"x": [a + 1]})
    assert not same([a, a], [a])
    assert not same({"x": a}, {"y": a})
    assert not same(a, a.double())
    assert same(a, a.double(), exact_dtype=False)
    assert same(float("nan"), float("nan")) and not same(1.0, 1.5)
    assert not same(torch.tensor([1, 2]), torch.tensor([1, 3]))


def test_run_eager_and_compiled_gives_each_run_its_own_inputs():
    def mutate(x):
        x.add_(1)
        return x

    original = torch.zeros(2)
    counter = CompileCounter()
    eager, compiled = run_eager_and_compiled(mutate, original, backend=counter)
    assert counter.frame_count == 1 and counter.op_count == 1
    assert same(eager, torch.ones(2)) and same(compiled, torch.ones(2))
    assert same(original, torch.zeros(2))


# --- with the real frame hook ---------------------------------------------------------------


def _record_offered_frames(monkeypatch):
    offered = []

    def convert(self, frame_info):
        offered.append(frame_info.f_code)
        return None  # decline: the frame runs unmodified

    monkeypatch.setattr(_convert_frame.FrameConverter, "convert", convert)
    return offered


def test_real_hook_offers_the_user_frames_to_the_callback(monkeypatch):
    offered = _record_offered_frames(monkeypatch)

    def inner(x):
        return x + 1

    def outer(x):
        return inner(x) * 2

    assert same(bytegraph.compile(outer, backend="eager")(torch.ones(1)), torch.full((1,), 4.0))
    assert outer.__code__ in offered and inner.__code__ in offered
    assert not any(_convert_frame.is_internal_code(code) for code in offered)
    offered.clear()
    with bytegraph.optimize("eager"):
        outer(torch.ones(1))
    assert offered[:2] == [outer.__code__, inner.__code__]
    offered.clear()
    outer(torch.ones(1))
    assert offered == []


def test_real_hook_skips_disabled_functions(monkeypatch):
    offered = _record_offered_frames(monkeypatch)

    def helper(x):
        return x - 1

    @bytegraph.disable
    def opaque(x):
        return helper(x)

    def outer(x):
        return opaque(x)

    bytegraph.compile(outer, backend="eager")(torch.ones(1))
    assert outer.__code__ in offered
    assert opaque.__wrapped__.__code__ not in offered and helper.__code__ not in offered


def test_graph_breaks_are_counted_where_torch_dynamo_counts_them():
    from torch._dynamo.utils import counters

    def f(x):
        x = x + 1
        bytegraph.graph_break()
        return x * 2

    bytegraph.reset()
    counters.clear()
    bytegraph.compile(f, backend="eager")(torch.ones(2))
    assert sum(counters["graph_break"].values()) == 1
    assert "graph_break() called" in next(iter(counters["graph_break"]))


def test_each_capturing_span_starts_a_new_module_generation_once_torch_dynamo_is_loaded():
    # torch's GenerationTracker (read by CUDA graph trees and torch's own tests) counts
    # capturing spans and tags each nn.Module with the span it was made in.
    from torch._dynamo.mutation_guard import GenerationTracker

    compiled = bytegraph.compile(lambda x: x + 1, backend="eager")
    compiled(torch.ones(2))
    before = GenerationTracker.generation
    compiled(torch.ones(2))
    assert GenerationTracker.generation == before + 1
    old = torch.nn.Linear(2, 2)
    with bytegraph.optimize("eager"):
        new = torch.nn.Linear(2, 2)
    assert GenerationTracker.get_generation_value(new) == before + 2
    assert GenerationTracker.get_generation_value(old) == before + 1
