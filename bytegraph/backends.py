"""Backends: what turns a captured graph into something fast to call.

A backend is any callable `backend(gm: torch.fx.GraphModule, example_inputs: list[Tensor])`
returning a callable with the graph's calling convention (same inputs, same outputs). The
example inputs are real tensors.

Names resolve in two registries: bytegraph's own (`eager`, `aot_eager`, `inductor`, and any
`register_backend`), then torch.compile's (every name in
`torch._dynamo.list_backends(exclude_tags=())`). Torch's backends are adapted to graphs that
Dynamo did not produce: several of them (the aot_* family, cudagraphs, ...) require the graph
to return a flat tuple, so graphs with another output structure are rewritten to return a
tuple and the compiled result rebuilds the original structure.

`call_backend` is how the compiler calls a backend: failures become
`bytegraph.exc.BackendCompilerFailed`, and the compiled callable runs with capture off (its own
frames, e.g. `GraphModule.forward`, must not be captured again).
"""

import contextlib
import difflib
import functools
import inspect
import logging
import typing

import torch
import torch.fx

from bytegraph import _fx_graph, _input_aliasing, _logging, config, exc, stance
from bytegraph.eval_frame import DISABLE_MARK, frame_hook
from bytegraph.exc import BackendCompilerFailed, InvalidBackend

log = logging.getLogger("bytegraph")

COMPILE_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class _Registered(typing.NamedTuple):
    compiler_fn: typing.Callable
    tags: tuple


_OWN_BACKENDS = {}


def register_backend(compiler_fn=None, *, name=None, tags=()):
    """Register `compiler_fn` under `name` (default: its __name__). Usable as a decorator."""
    if compiler_fn is None:
        return functools.partial(register_backend, name=name, tags=tags)
    if not callable(compiler_fn):
        raise TypeError(f"a backend must be callable, got {type(compiler_fn).__name__}")
    name = name or compiler_fn.__name__
    if name in _OWN_BACKENDS:
        raise ValueError(f"a backend named {name!r} is already registered")
    _OWN_BACKENDS[name] = _Registered(compiler_fn, tuple(tags))
    return compiler_fn


# --- graphs with a flat tuple output --------------------------------------------------------


def _output_node(gm):
    for node in reversed(gm.graph.nodes):
        if node.op == "output":
            return node
    raise ValueError(f"graph {type(gm).__name__} has no output node")


def _flatten(value, leaves):
    """Appends value's leaves to `leaves`; returns a function rebuilding value from new leaves."""
    if isinstance(value, (tuple, list)):
        rebuild_items = [_flatten(item, leaves) for item in value]
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return lambda new: type(value)(*(rebuild(new) for rebuild in rebuild_items))
        # fx stores outputs in immutable_list/immutable_dict; generated code returns plain ones.
        kind = tuple if isinstance(value, tuple) else list
        return lambda new: kind(rebuild(new) for rebuild in rebuild_items)
    if isinstance(value, dict):
        keys = list(value)
        rebuild_items = [_flatten(value[key], leaves) for key in keys]
        return lambda new: {key: rebuild(new) for key, rebuild in zip(keys, rebuild_items)}
    if isinstance(value, torch.fx.Node):
        index = len(leaves)
        leaves.append(value)
        return lambda new: new[index]
    return lambda new: value


def _returns_flat_tuple(gm):
    result = _output_node(gm).args[0]
    return isinstance(result, tuple) and all(isinstance(item, torch.fx.Node) for item in result)


def with_tuple_output(gm):
    """Returns (graph module returning a flat tuple of its node outputs, rebuild).

    rebuild(tuple_result) gives the original graph's result. When gm already returns a flat
    tuple of nodes, returns (gm, None).
    """
    if _returns_flat_tuple(gm):
        return gm, None
    leaves = []
    rebuild = _flatten(_output_node(gm).args[0], leaves)
    graph = torch.fx.Graph()
    copies = {}
    graph.graph_copy(gm.graph, copies)
    graph.output(tuple(copies[leaf] for leaf in leaves))
    return torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__), rebuild


def _rebuilding(compiled, rebuild):
    @functools.wraps(compiled)
    def call_and_rebuild(*args):
        return rebuild(compiled(*args))

    return call_and_rebuild


# --- torch.compile's registry ---------------------------------------------------------------


def _torch_registry():
    from torch._dynamo.backends import registry

    return registry


class TorchBackend:
    """A backend from torch.compile's registry, adapted to graphs not produced by Dynamo."""

    def __init__(self, name, compiler_fn):
        self.compiler_name = name
        self.compiler_fn = compiler_fn

    def __call__(self, gm, example_inputs, **kwargs):
        tuple_gm, rebuild = with_tuple_output(gm)
        compiled = self.compiler_fn(tuple_gm, example_inputs, **kwargs)
        if rebuild is None or not callable(compiled):
            return compiled
        return _rebuilding(compiled, rebuild)

    def __repr__(self):
        return f"TorchBackend({self.compiler_name!r})"


def _torch_backend_names(exclude_tags):
    return _torch_registry().list_backends(exclude_tags=tuple(exclude_tags))


# --- bytegraph's own backends ---------------------------------------------------------------


@register_backend
def eager(gm, example_inputs):
    """Runs the captured graph as Python code: no compilation, for testing capture."""
    return gm.forward


@register_backend
def aot_eager(gm, example_inputs):
    """AOTAutograd's joint forward/backward tracing, then eager execution of the result."""
    return TorchBackend("aot_eager", _torch_registry().lookup_backend("aot_eager"))(gm, example_inputs)


def _check_inductor_options(options):
    from torch._inductor import config as inductor_config

    known = inductor_config.get_config_copy()
    checked = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise TypeError(f"options keys must be str, got {type(key).__name__} ({key!r})")
        name = key.replace("-", "_")
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=5)
            hint = f"; did you mean one of {close}?" if close else "; see torch._inductor.list_options()"
            raise ValueError(f"unknown inductor option {key!r}{hint}")
        expected = inductor_config.get_type(name)
        # Generic aliases (list[str], Optional[...]) cannot be isinstance-checked.
        checkable = typing.get_origin(expected) is None and isinstance(expected, type)
        if checkable and not isinstance(value, expected):
            raise TypeError(
                f"inductor option {key!r} must be {expected.__name__}, got {type(value).__name__}"
            )
        checked[name] = value
    return checked


def inductor_config_patches(mode=None, options=None, dynamic=None):
    """The inductor config changes that torch.compile makes for `mode` and `options`."""
    patches = {}
    if mode not in (None, "default"):
        from torch._inductor import list_mode_options

        patches.update(list_mode_options(mode, dynamic))
    if options:
        patches.update(_check_inductor_options(options))
    return patches


class InductorBackend:
    """TorchInductor (torch._inductor.compile_fx) with torch.compile's mode/options handling."""

    compiler_name = "inductor"

    def __init__(self, mode=None, options=None, dynamic=None):
        self.mode = mode
        self.options = dict(options or {})
        self.dynamic = dynamic
        self.config_patches = inductor_config_patches(mode, options, dynamic)

    def __call__(self, gm, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        return compile_fx(gm, example_inputs, config_patches=dict(self.config_patches))

    def __repr__(self):
        return f"InductorBackend(mode={self.mode!r}, options={self.options!r})"


register_backend(InductorBackend(), name="inductor")


# --- names, lookup, listing -----------------------------------------------------------------


def list_backends(exclude_tags=("debug", "experimental")):
    """Sorted names usable as `backend=`: torch.compile's list plus bytegraph's own.

    Names tagged with any of `exclude_tags` are left out; bytegraph's own backends are
    untagged, so `eager`, `aot_eager` and `inductor` are always listed.
    """
    if isinstance(exclude_tags, str):
        exclude_tags = (exclude_tags,)
    excluded = set(exclude_tags or ())
    names = {name for name, entry in _OWN_BACKENDS.items() if not excluded.intersection(entry.tags)}
    names.update(_torch_backend_names(excluded))
    return sorted(names)


def lookup_backend(backend):
    """Resolve a backend name or callable to a callable `(gm, example_inputs) -> callable`."""
    if isinstance(backend, str):
        if backend in _OWN_BACKENDS:
            return _OWN_BACKENDS[backend].compiler_fn
        if backend in _torch_backend_names(()):
            return TorchBackend(backend, _torch_registry().lookup_backend(backend))
        raise InvalidBackend(backend, list_backends(exclude_tags=()))
    if not callable(backend):
        raise TypeError(
            "backend must be a name (see bytegraph.list_backends()) or a callable "
            f"(gm, example_inputs) -> callable, got {type(backend).__name__}"
        )
    return backend


def backend_name(backend):
    """A readable name for a backend name, callable or backend object."""
    if isinstance(backend, str):
        return backend
    for attribute in ("compiler_name", "__name__"):
        name = getattr(backend, attribute, None)
        if isinstance(name, str):
            return name
    if isinstance(backend, functools.partial):
        return backend_name(backend.func)
    return type(backend).__name__


def _accepts_keyword(fn, keyword):
    if isinstance(fn, TorchBackend):
        fn = fn.compiler_fn
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True  # a builtin we cannot inspect: let the call decide
    return any(p.name == keyword or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


_BACKEND_KEYS = {}


def backend_key(backend, *, mode=None, options=None):
    """One object per backend and its settings, the same for equal settings: what a compiled
    frame's cache entries are made for. A callable backend is its own key; a name with its
    mode and options gets an interned tuple."""
    if callable(backend) and not isinstance(backend, str):
        return backend
    described = (backend, mode, repr(sorted((options or {}).items())))
    return _BACKEND_KEYS.setdefault(described, described)


def resolve_backend(backend, *, mode=None, options=None, dynamic=None):
    """The compiler function for `compile(backend=..., mode=..., options=..., dynamic=...)`.

    As torch.compile does: "inductor" gets the config changes of `mode`/`options`; any other
    backend is called with `mode=`/`options=` keyword arguments when they are given, which is
    only allowed when the backend accepts them.
    """
    if mode is not None and not isinstance(mode, str):
        raise TypeError(f"mode must be a str or None, got {type(mode).__name__}")
    if mode not in COMPILE_MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {COMPILE_MODES}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    if mode not in (None, "default") and options:
        raise ValueError(
            "mode and options cannot both be given: options already choose the settings a mode sets"
        )
    if isinstance(backend, str) and backend == "inductor":
        return InductorBackend(mode=mode, options=options, dynamic=dynamic)
    compiler_fn = lookup_backend(backend)
    if isinstance(compiler_fn, InductorBackend) and (mode not in (None, "default") or options):
        return InductorBackend(mode=mode, options=options, dynamic=dynamic)
    extra = {}
    if mode not in (None, "default"):
        extra["mode"] = mode
    if options:
        extra["options"] = options
    for keyword in extra:
        if not _accepts_keyword(compiler_fn, keyword):
            raise ValueError(
                f"{keyword}= is only supported by inductor-like backends; backend "
                f"{backend_name(backend)!r} takes no {keyword!r} argument"
            )
    if extra:
        return functools.partial(compiler_fn, **extra)
    return compiler_fn


# --- calling a backend ----------------------------------------------------------------------


def is_torch_compiler(compiler_fn):
    """Whether `compiler_fn` is, or hands graphs to, one of torch.compile's compilers
    (AOTAutograd, inductor, anything in torch's registry). A wrapper says what it wraps
    through an `inner_backend` attribute."""
    while compiler_fn is not None:
        if isinstance(compiler_fn, functools.partial):
            compiler_fn = compiler_fn.func
        elif isinstance(compiler_fn, (TorchBackend, InductorBackend)) or compiler_fn is aot_eager:
            return True
        else:
            compiler_fn = getattr(compiler_fn, "inner_backend", None)
    return False


@contextlib.contextmanager
def _tracing_context(fake_mode, compiler_fn, example_inputs):
    """Torch backends look up the fake mode through the ambient TracingContext, as under
    torch.compile. A dynamic trace hands them its own mode, whose symbols its graph's sizes
    are (its input fakes refreshed first: _refresh_input_fakes). A static trace has none, and
    torch compilers then get a fresh mode with an empty ShapeEnv: without a ShapeEnv inductor bypasses its FX graph cache and AOTAutograd its
    autograd cache, and DDPOptimizer cannot keep each piece's metadata. The graph's inputs
    (real tensors) are fakified in it with static sizes up front and kept alive through the
    compile (the mode remembers a tensor's fake only while the fake lives): the compilers'
    own fakification of the same tensors then finds them, and a static graph stays static.
    Other backends get no context: making the first ShapeEnv of a process imports
    torch._dynamo, which a compile with `eager` never needs."""
    from torch._guards import TracingContext, tracing

    if TracingContext.try_get() is not None or (fake_mode is None and not is_torch_compiler(compiler_fn)):
        yield
        return
    static_fakes = []
    if fake_mode is None:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        fake_mode = FakeTensorMode(shape_env=ShapeEnv())
        static_fakes = [fake_mode.from_tensor(value, static_shapes=True)
                        for value in example_inputs if isinstance(value, torch.Tensor)]
    with tracing(TracingContext(fake_mode)):
        yield
    del static_fakes


def _refresh_input_fakes(fake_mode, example_inputs):
    """The trace ran the program's in-place ops on the fakes its mode remembers for the inputs
    (`b += w(x)` made b's fake require grad): a backend faking the inputs again in that mode
    would see them as they were after the call. A fake whose requires_grad differs from its
    input's is replaced by a fresh one with the same (symbolic) sizes and the input's flag.
    (Only that flag: a fake written through a view keeps its memo entry, which the backend's
    own view replay relies on.)"""
    converter = fake_mode.fake_tensor_converter
    for real in example_inputs:
        if not isinstance(real, torch.Tensor) or isinstance(real, torch.nn.Parameter):
            continue
        fake = converter._get_memo(real)
        if fake is None or fake.requires_grad == real.requires_grad:
            continue
        with fake_mode:
            fresh = fake.detach()
        converter.set_tensor_memo(real, fresh.requires_grad_(real.requires_grad))


def call_backend(backend, gm, example_inputs, graph_name=None, *, fake_mode=None):
    """Compile `gm` with `backend` (name or callable); returns the compiled callable.

    graph_name names the graph in errors (default: the graph module's class name).
    fake_mode: the FakeTensorMode the graph's `meta["example_value"]`s live in, if any; see
    _tracing_context for the one torch backends see.
    Raises BackendCompilerFailed if the backend raises or returns something not callable.
    """
    compiler_fn = lookup_backend(backend)
    name = backend_name(backend)
    graph_name = graph_name or type(gm).__name__
    if config.verbose:
        log.info(
            "bytegraph: compiling graph %s with backend %s\n%s",
            graph_name,
            name,
            gm.print_readable(print_output=False),
        )
    expected_outputs = _output_count(gm)  # before the backend, which may rewrite the graph
    if fake_mode is not None:
        _refresh_input_fakes(fake_mode, example_inputs)
    try:
        example_inputs = list(example_inputs)
        with _tracing_context(fake_mode, compiler_fn, example_inputs), _logging.output_code_capture(graph_name, name):
            compiled = compiler_fn(gm, example_inputs)
    except Exception as error:
        raise exc.raised_type(BackendCompilerFailed)(name, graph_name, error) from error
    if not callable(compiled):
        error = TypeError(f"the backend returned {type(compiled).__name__}, which is not callable")
        raise exc.raised_type(BackendCompilerFailed)(name, graph_name, error) from error
    compiled = _fx_graph.ready_to_run(compiled)
    if compiler_fn is not eager:  # eager runs the graph's ops on the real tensors: any aliasing is right
        compiled = _input_aliasing.guarded(compiled, gm, example_inputs)
    return _checked_graph_call(compiled, expected_outputs, name, graph_name)


def _output_count(gm):
    """How many values the graph returns (its output node holds a tuple), or None if the
    graph returns something else."""
    for node in reversed(gm.graph.nodes):
        if node.op == "output":
            outputs = node.args[0]
            return len(outputs) if isinstance(outputs, (tuple, list)) else None
    return None


def _checked_graph_call(compiled, expected, backend_name_, graph_name):
    """`compiled` wrapped for the generated code: it runs with capture off (the compiled
    graph's own Python frames, GraphModule.forward and runtime wrappers, must not be offered
    to the frame callback active around the user's code) and, until a call passes the
    check, its outputs are checked against the graph's: a backend returning the wrong number
    of values would otherwise make the compiled function return a wrong one."""
    def bad_outputs(outputs):
        got = f"{len(outputs)} values" if isinstance(outputs, (tuple, list)) else type(outputs).__name__
        error = TypeError(f"the compiled graph returned {got}; the graph has {expected} outputs (a tuple)")
        raise exc.raised_type(BackendCompilerFailed)(backend_name_, graph_name, error) from None

    checked = -1 if expected is None else expected
    compiled_graph = frame_hook().CapturedCall(compiled, None, None, checked, bad_outputs)
    functools.update_wrapper(compiled_graph, compiled)
    setattr(compiled_graph, DISABLE_MARK, True)
    return compiled_graph


stance._resolve_backend = resolve_backend
