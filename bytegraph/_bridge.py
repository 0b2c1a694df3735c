"""The torch bridge: the torch knowledge the C++ core relies on, in one place it imports.

The tracer (csrc/trace) never imports torch itself. It calls the few functions here, through
function objects it looks up once per process (csrc/trace/bridge.cpp):

- `Session(...)`: the fake-tensor state of one compile; static traces share their thread's
  mode and fakes (`_fake_cache`). `Session.fake_input(real)` is the fake twin of a real input
  tensor (memoised while it holds); `Session.run_op(kind, target, args, kwargs)` runs one
  recorded operation on fake values.
- `build_graph_module(nodes, attrs, ...)`: the one materialisation of a C++ graph into
  torch.fx (`_fx_graph`).
- `classify(obj)`: how the tracer should treat a Python object it reads (`_classify`).
- `written_tensors`, `aliases_any`, `tensor_read_error`: what an op writes and whether that
  reaches a tensor from outside the graph (`_input_aliasing`).
- the plan views codegen hands to Python (`GraphOutput`, `Constant`, `Source`, `NamedTuple`,
  `PlanView`) and `list_iterator_at`, which generated code calls (`_plans`).

Errors that mean "this op's output depends on tensor data" are re-raised as
`DataDependentOp`, which the C++ side turns into Unsupported("data_dependent_op").
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import types

import torch

from bytegraph import _fake_cache
from bytegraph._fake_cache import UnfakeableTensor  # noqa: F401  (the tracer reads it here)
# How each object is treated (classify and its tables): the tracer reads these here.
from bytegraph._classify import (  # noqa: F401
    TENSOR_CONSTANT_METHODS,
    autograd_apply_target,
    classify,
    compared_by_value,
    subclass_metadata_guard,
    is_opaque_object,
    folded_result,
    register_folded,
    set_rule,
    tensor_attribute_kind,
)
# The tracer and codegen read these here too.
from bytegraph._fx_graph import NodeRef, build_graph_module  # noqa: F401
from bytegraph._input_aliasing import aliases_any, tensor_read_error, written_tensors  # noqa: F401
from bytegraph._plans import (  # noqa: F401
    Constant,
    GraphOutput,
    NamedTuple,
    PlanView,
    Source,
    list_iterator_at,
    rebuild_output,
)
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
)
from torch.fx.experimental.symbolic_shapes import (
    GuardOnDataDependentSymNode,
    compute_unbacked_bindings,
)

from bytegraph import config


_dynamic_log = logging.getLogger("bytegraph.dynamic")


class DataDependentOp(Exception):
    """An operation whose result cannot be computed from tensor metadata alone."""


# A question about a value only the data knows: an op's output, or a decision on a scalar read
# from a tensor (`.item()` kept in the graph as a symbol with no value while tracing).
_DATA_DEPENDENT = (DataDependentOutputException, DynamicOutputShapeException, GuardOnDataDependentSymNode)


class Session:
    """Fake-tensor state for one compile.

    `shapes`: what may be symbolic (a `_dynamic.ShapePolicy`), or None for a static trace.
    The ShapeEnv (`self.shapes`, a `_bridge_shapes.Shapes`) is made when the first input
    turns out symbolic, so a static trace never pays for one."""

    def __init__(self, shapes=None):
        # Until an input turns symbolic the trace is static and shares its thread's fakes.
        self._fakes = _fake_cache.shared()
        self.mode = self._fakes.mode
        self._module_state = {}  # id(module) -> (module, fake params and buffers)
        self.policy = shapes
        self.shapes = None
        # Read once per trace by the tracer: whether ints may become symbolic inputs, and
        # whether guards added by each op are logged (the `dynamic` log artifact).
        self.may_be_dynamic = shapes is not None
        self.log_dynamic = shapes is not None and _dynamic_log.isEnabledFor(logging.INFO)
        # Whether `Tensor.item()` stays in the graph (torch.compile's setting; always so under
        # fullgraph, which the tracer adds).
        self.capture_scalar_outputs = bool(config.capture_scalar_outputs)

    def fake_input(self, real: torch.Tensor):
        return _fake_cache.fake_copy(lambda: self._fakes.fake(real))

    def wrap_input(self, real: torch.Tensor, source_name: str):
        """(fake, None) for a static input; (fake, (lifted, unchecked sizes, unchecked
        strides, inner tensors' unchecked ones)) for one with symbolic sizes (see
        `_bridge_shapes.Shapes.tensor`)."""
        dims = self.policy.tensor_dims(source_name, real) if self.policy is not None else None
        if dims is None:
            return self.fake_input(real), None
        shapes = self._shapes()
        fake, lifted, sizes, strides, inner = _fake_cache.fake_copy(lambda: shapes.tensor(self.mode, real, source_name, dims))
        return fake, (lifted, sizes, strides, inner)

    def wrap_int(self, value: int, source_name: str, attribute: bool = False):
        """A SymInt standing for int input `value`, or None when it stays a constant."""
        why = self.policy.int_dynamic(source_name, value, attribute) if self.policy is not None else None
        if why is None:
            return None
        return self._shapes().int(value, source_name, why)

    def _shapes(self):
        if self.shapes is None:
            from bytegraph._bridge_shapes import Shapes

            self._fakes.retire()  # the mode gets a ShapeEnv: it is this trace's own from now
            self.shapes = Shapes(self.mode)
        return self.shapes

    def allow_scalar_outputs(self):
        """From now on a scalar read from a fake (`.item()`) is a fresh unbacked symbol."""
        env = self._shapes().env
        if not env.allow_scalar_outputs:  # a setting fake tensors key their op cache on
            env.settings = dataclasses.replace(env.settings, allow_scalar_outputs=True)

    @property
    def dynamic_mode(self):
        """The fake mode when the trace has symbolic values (backends must reuse it), else None."""
        return self.mode if self.shapes is not None else None

    def run_op(self, kind: str, target, args: tuple, kwargs: dict):
        try:
            with self.mode:
                if kind == "call_function":
                    result = target(*args, **kwargs)
                elif kind == "call_method":
                    result = getattr(args[0], target)(*args[1:], **kwargs)
                elif kind == "call_module":
                    result = self._run_module(target, args, kwargs)
                else:
                    raise ValueError(f"bytegraph bridge: unknown op kind {kind!r}")
        except _DATA_DEPENDENT as error:
            raise DataDependentOp(f"{type(error).__name__}: {error}") from error
        env = self.mode.shape_env
        if env is not None and env.pending_fresh_unbacked_symbols:
            # The op made unbacked symbols (`.item()`): they are its result's, bound to its node
            # (`_unbacked_bindings` when the graph is built); a backend tracing the graph again
            # must not find them pending.
            compute_unbacked_bindings(env, result)
        return result

    def _run_module(self, module: torch.nn.Module, args, kwargs):
        return self._fake_module(module)(*args, **kwargs)

    def _fake_module(self, module: torch.nn.Module) -> torch.nn.Module:
        """A shallow twin of `module` whose parameters and buffers are this mode's fakes
        (memoised): leaf modules then run on fakes at the cost of a plain call."""
        entry = self._module_state.get(id(module))
        if entry is not None and entry[0] is module:
            return entry[1]
        twin = copy.copy(module)
        twin.__dict__["_parameters"] = {
            name: None if p is None else self.fake_input(p) for name, p in module._parameters.items()}
        twin.__dict__["_buffers"] = {
            name: None if b is None else self.fake_input(b) for name, b in module._buffers.items()}
        twin.__dict__["_modules"] = {
            name: None if m is None else self._fake_module(m) for name, m in module._modules.items()}
        self._module_state[id(module)] = (module, twin)
        return twin


def describe_fake(fake) -> str:
    """`f32[2, 3]`: the short form used in value reprs."""
    if isinstance(fake, torch.Tensor):
        dtype = _DTYPE_ABBREVIATIONS.get(fake.dtype, str(fake.dtype).replace("torch.", ""))
        return f"{dtype}[{', '.join(str(s) for s in fake.shape)}]"
    return type(fake).__name__


_DTYPE_ABBREVIATIONS = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "b8", torch.complex64: "c64", torch.complex128: "c128",
}


def bind_arguments(fn, args: tuple, kwargs: dict):
    """(function, {parameter: real value}) for calling `fn(*args, **kwargs)`: bound methods
    and nn.Module instances are traced as their underlying function with `self` bound."""
    import inspect

    if isinstance(fn, torch.nn.Module):
        args = (fn,) + tuple(args)
        fn = type(fn).forward
    elif isinstance(fn, types.MethodType):
        args = (fn.__self__,) + tuple(args)
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"bytegraph can only trace Python functions, got {type(fn).__name__}")
    # The signature of the code being traced: not the one functools.wraps advertises through
    # __wrapped__ (a decorator's wrapper(*args, **kwargs) takes its arguments as they come).
    bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    # inspect names a comprehension's implicit iterator argument `.0` "implicit0".
    varnames = fn.__code__.co_varnames
    for name in list(arguments):
        if name.startswith("implicit") and name not in varnames and "." + name[len("implicit"):] in varnames:
            arguments["." + name[len("implicit"):]] = arguments.pop(name)
    return fn, arguments


def signature_of(function, of_method):
    """inspect.signature(function) computed at trace time, or None to trace inspect instead.
    `of_method`: the signature of `function` bound to an instance (its first parameter gone),
    as inspect gives for a bound method. A Signature is immutable and depends on the function
    alone, which the trace guards."""
    import inspect

    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None  # traced, so the error is raised where Python raises it
    if not of_method:
        return signature
    parameters = list(signature.parameters.values())
    if not parameters or parameters[0].kind not in (inspect.Parameter.POSITIONAL_ONLY,
                                                    inspect.Parameter.POSITIONAL_OR_KEYWORD):
        return None
    return signature.replace(parameters=parameters[1:])
