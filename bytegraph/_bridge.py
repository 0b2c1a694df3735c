"""The torch bridge: every piece of torch knowledge the C++ core relies on.

The tracer (csrc/trace) never imports torch itself. It calls the few functions here, through
function objects it looks up once per process:

- `Session(...)`: the fake-tensor state of one compile; static traces share their thread's
  mode and fakes (`_fake_cache`).
- `Session.fake_input(real)`: the fake twin of a real input tensor (memoised while it holds).
- `Session.run_op(kind, target, args, kwargs)`: runs one recorded operation on fake values.
- `build_graph_module(nodes, attrs)`: the one materialisation of a C++ graph into torch.fx.
- `classify(obj)`: how the tracer should treat a Python object it reads (`_classify.py`).

Errors that mean "this op's output depends on tensor data" are re-raised as
`DataDependentOp`, which the C++ side turns into Unsupported("data_dependent_op").
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import operator
import types
import weakref

import sympy
import torch
import torch.fx

from bytegraph import _fake_cache
from bytegraph._fake_cache import UnfakeableTensor  # noqa: F401  (the tracer reads it here)
# How each object is treated (classify and its tables): the tracer reads these here.
from bytegraph._classify import (  # noqa: F401
    TENSOR_CONSTANT_METHODS,
    autograd_apply_target,
    classify,
    folded_result,
    register_folded,
    set_rule,
    tensor_attribute_kind,
)
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
)
from torch.fx.experimental.symbolic_shapes import (
    GuardOnDataDependentSymNode,
    compute_unbacked_bindings,
    free_unbacked_symbols,
)

from bytegraph import config


_dynamic_log = logging.getLogger("bytegraph.dynamic")


class DataDependentOp(Exception):
    """An operation whose result cannot be computed from tensor metadata alone."""


class NodeRef:
    """Marks a reference to graph node `index` inside a recorded node's args/kwargs."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self):
        return f"NodeRef({self.index})"


# How a traced function's return value is rebuilt from the graph's outputs: a tree of
# tuples/lists/dicts whose leaves are one of these three.
class GraphOutput:
    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self):
        return f"GraphOutput({self.index})"

    def __eq__(self, other):
        return isinstance(other, GraphOutput) and other.index == self.index


class Constant:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Constant({self.value!r})"

    def __eq__(self, other):
        return isinstance(other, Constant) and other.value == self.value


class Source:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"Source({self.name})"

    def __eq__(self, other):
        return isinstance(other, Source) and other.name == self.name


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
        strides)) for one with symbolic sizes (see `_bridge_shapes.Shapes.tensor`)."""
        dims = self.policy.tensor_dims(source_name, real) if self.policy is not None else None
        if dims is None:
            return self.fake_input(real), None
        shapes = self._shapes()
        fake, lifted, sizes, strides = _fake_cache.fake_copy(lambda: shapes.tensor(self.mode, real, source_name, dims))
        return fake, (lifted, sizes, strides)

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


def user_location(filename: str, lineno: int, name: str, line: str) -> str:
    """A stack_trace string in the format FX's print_readable parses."""
    return f'  File "{filename}", line {lineno}, in {name}\n    {line.strip()}\n'


def _map_refs(value, nodes):
    if isinstance(value, NodeRef):
        return nodes[value.index]
    if isinstance(value, tuple):
        return tuple(_map_refs(item, nodes) for item in value)
    if isinstance(value, list):
        return [_map_refs(item, nodes) for item in value]
    if isinstance(value, dict):
        return {key: _map_refs(item, nodes) for key, item in value.items()}
    if isinstance(value, slice):
        return slice(_map_refs(value.start, nodes), _map_refs(value.stop, nodes),
                     _map_refs(value.step, nodes))
    return value


_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


def _unbacked_bindings(number):
    """The symbols a node's scalar result binds (as torch.compile's graphs record them): a
    scalar read from a tensor is one fresh symbol."""
    expr = number.node.expr
    return {expr: ()} if isinstance(expr, sympy.Symbol) else {}


def build_graph_module(nodes: list, attrs: dict, outputs: tuple, positions: list):
    """Materialises the C++ graph: `nodes` are (op, target, args, kwargs, name, fake, stack_trace,
    local_name, tensor_dict) in creation order; `attrs` maps root attribute names (call_module / get_attr targets) to
    objects; `outputs` is a tuple of NodeRefs; NodeRef(i) is the positions[i]-th node."""
    root = torch.nn.Module()
    for name, obj in attrs.items():
        if isinstance(obj, torch.nn.Module):
            root.add_module(name, obj)
        elif isinstance(obj, torch.nn.Parameter):
            root.register_parameter(name, obj)
        elif isinstance(obj, torch.Tensor):
            root.register_buffer(name, obj)
        else:
            setattr(root, name, obj)
    graph = torch.fx.Graph()
    created = []
    for op, target, args, kwargs, name, fake, stack_trace, local_name, tensor_dict in nodes:
        fx_nodes = _Remap(created, positions)
        args = _map_refs(args, fx_nodes)
        kwargs = _map_refs(kwargs, fx_nodes)
        node = graph.create_node(op, target, args, kwargs, name=name or None)
        if local_name:
            # Named by default first, then after the local, as torch.compile's graphs are: the
            # default name stays taken (a later op of that kind gets a suffix).
            node._rename(local_name)
        if fake is not None:
            node.meta["example_value"] = fake
            if isinstance(fake, _SYMBOLIC) and free_unbacked_symbols(fake):
                node.meta["unbacked_bindings"] = _unbacked_bindings(fake)
        if stack_trace:
            node.meta["stack_trace"] = stack_trace
        if tensor_dict is not None:
            node.meta["tensor_dict"] = tensor_dict
        created.append(node)
    graph.output(_map_refs(tuple(outputs), _Remap(created, positions)))
    gm = torch.fx.GraphModule(root, graph)
    _forget_source_with(gm)
    return gm


def _forget_source_with(gm):
    """torch.fx keeps the generated source of every GraphModule it compiles, for tracebacks, in
    a process-wide cache (and linecache) that nothing ever empties: about a kilobyte per graph,
    forever. The graph's own entries go when the graph does."""
    key = type(gm).forward.__code__.co_filename
    if key.startswith("<"):  # generated code, never a real file
        weakref.finalize(gm, _forget_source, key)


def _forget_source(key):
    import linecache

    cache = getattr(getattr(torch.fx.graph_module, "_loader", None), "eval_cache", None)
    if isinstance(cache, dict):
        cache.pop(key, None)
    linecache.cache.pop(key, None)


class _Remap:
    __slots__ = ("created", "positions")

    def __init__(self, created, positions):
        self.created = created
        self.positions = positions

    def __getitem__(self, index):
        return self.created[self.positions[index]]


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


__all__ = ["Session", "NodeRef", "GraphOutput", "Constant", "Source", "DataDependentOp",
           "classify", "tensor_attribute_kind", "build_graph_module", "user_location"]
del math, operator


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


def rebuild_output(tree, graph_outputs, resolve_source=None):
    """The traced function's return value from the graph's outputs and a trace's `output`
    description; `resolve_source(name)` supplies Source leaves (e.g. from the frame)."""
    if isinstance(tree, GraphOutput):
        return graph_outputs[tree.index]
    if isinstance(tree, Constant):
        return tree.value
    if isinstance(tree, Source):
        if resolve_source is None:
            raise ValueError(f"no value for source {tree.name}")
        return resolve_source(tree.name)
    if isinstance(tree, NamedTuple):
        return tree.constructor(tuple(rebuild_output(item, graph_outputs, resolve_source) for item in tree.items))
    if isinstance(tree, tuple):
        return tuple(rebuild_output(item, graph_outputs, resolve_source) for item in tree)
    if isinstance(tree, list):
        return [rebuild_output(item, graph_outputs, resolve_source) for item in tree]
    if isinstance(tree, dict):
        return {key: rebuild_output(item, graph_outputs, resolve_source) for key, item in tree.items()}
    raise TypeError(f"not an output description: {tree!r}")


class NamedTuple:
    """A named tuple (or torch.return_types structseq) built by `constructor(tuple(items))`."""

    __slots__ = ("constructor", "items")

    def __init__(self, constructor, items):
        self.constructor, self.items = constructor, list(items)

    def __repr__(self):
        return f"NamedTuple({self.constructor!r}, {self.items!r})"

    def __eq__(self, other):
        return isinstance(other, NamedTuple) and (other.constructor, other.items) == (self.constructor, self.items)


class PlanView:
    """A plan kind with no view class of its own (a NULL, an iterator, a bound method...)."""

    __slots__ = ("kind", "items")

    def __init__(self, kind, items):
        self.kind, self.items = kind, list(items)

    def __repr__(self):
        return f"PlanView({self.kind!r}, {self.items!r})"

    def __eq__(self, other):
        return isinstance(other, PlanView) and (other.kind, other.items) == (self.kind, self.items)


def written_tensors(target, args, kwargs):
    """The tensors an op writes into (its first operand if it works in place, its `out=`), or
    None: asked of every recorded op, so the common answer is quick."""
    from bytegraph import _input_aliasing

    out = kwargs.get("out") if kwargs else None
    in_place = bool(args) and _input_aliasing.writes_first_operand(target, args, kwargs)
    if out is None and not in_place:
        return None
    written = [args[0]] if in_place else []
    if out is not None:
        written.extend(out if isinstance(out, (tuple, list)) else [out])
    return [t for t in written if isinstance(t, torch.Tensor)] or None


def tensor_read_error(tensor):
    """Why reading `tensor`'s autograd metadata raises (the text of the error), or None. Such
    a tensor (a view of a multi-output op that was written in place) raises wherever the
    program touches it."""
    try:
        tensor.is_leaf
        tensor.grad_fn
    except RuntimeError as error:
        return f"{type(error).__name__}: {error}"
    return None


def aliases_any(written, added, outside):
    """Whether a tensor in `written` shares storage with one of `outside` (the graph's
    outside tensors so far: a list, extended by the fakes `added` first). Compared without
    asking for the storages, whose size a fake with symbolic sizes would compute as a new
    symbolic expression. A tensor that cannot be compared counts as aliasing."""
    outside.extend(added)
    for tensor in written:
        for other in outside:
            try:
                if torch._C._is_alias_of(tensor, other):
                    return True
            except (RuntimeError, TypeError):
                return True
    return False


def list_iterator_at(state):
    """The iterator of a list standing at an index, from `state` = (list, index): what a loop
    interrupted by a graph break continues with in its resume function, whose prologue calls
    this (traced, or run). It reads the list as it changes, as the interrupted loop would."""
    items, position = state
    iterator = iter(items)
    iterator.__setstate__(position)
    return iterator


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
