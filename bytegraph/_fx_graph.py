"""The one materialisation of a graph the C++ tracer recorded into a torch.fx GraphModule."""

from __future__ import annotations

import enum
import weakref

import sympy
import torch
import torch.fx
from torch.fx._lazy_graph_module import _LazyGraphModule
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols


class NodeRef:
    """Marks a reference to graph node `index` inside a recorded node's args/kwargs."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self):
        return f"NodeRef({self.index})"


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
        if op == "call_function" and not writable((args, kwargs)):
            target, args, kwargs = _with_constants(target, args, kwargs)
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
    return GraphModule(root, graph)


_WRITTEN_AS_REPR = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), torch.dtype, torch.device,
                    torch.layout, torch.memory_format, torch.Size, torch.fx.Node, enum.Enum,
                    torch._ops.OpOverload, torch._ops.HigherOrderOperator) + _SYMBOLIC


def writable(value) -> bool:
    """Whether FX's generated code can write `value` as an argument: literals, torch's constants,
    nodes, and torch's opaque value types (a placement writes itself as Shard(dim=0))."""
    from torch._library.opaque_object import is_opaque_value_type

    if isinstance(value, _WRITTEN_AS_REPR):
        return True
    if isinstance(value, (tuple, list)):
        return all(writable(item) for item in value)
    if isinstance(value, dict):
        return all(writable(key) and writable(item) for key, item in value.items())
    if isinstance(value, slice):
        return writable((value.start, value.stop, value.step))
    return is_opaque_value_type(type(value))


def _with_constants(target, args, kwargs):
    """A call whose arguments hold an object the generated code cannot write (a device mesh, a
    process group): one function with the arguments bound, called with the call's nodes alone,
    so every backend traces through it to `target`."""
    nodes = []
    template = torch.fx.node.map_arg((args, kwargs), lambda node: nodes.append(node) or _Slot(len(nodes) - 1))

    def call(*values):
        bound_args, bound_kwargs = _fill(template, values)
        return target(*bound_args, **bound_kwargs)

    name = getattr(target, "__name__", type(target).__name__)
    call.__name__ = call.__qualname__ = f"{name}_with_constants"
    return call, tuple(nodes), {}


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


def _fill(value, values):
    if isinstance(value, _Slot):
        return values[value.index]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_fill(item, values) for item in value)
    if isinstance(value, list):
        return [_fill(item, values) for item in value]
    if isinstance(value, dict):
        return {key: _fill(item, values) for key, item in value.items()}
    return value


class GraphModule(_LazyGraphModule):
    """The graph a trace gives its backend. Its Python source is generated on first use (a
    call, `.code`, `str()`), as torch.compile's graphs are: backends that retrace the graph
    through an Interpreter (AOTAutograd, so aot_eager and inductor) never need it, and it
    costs a fifth of a trace. Each source it generates goes with it (_forget_source_with)."""

    def _real_recompile(self):
        python_code = super()._real_recompile()
        _forget_source_with(self)
        return python_code


def ready_to_run(compiled):
    """A backend's result that is a graph module of ours, or its forward not yet generated
    (the eager backend returns `gm.forward`), made to run the generated code directly: the
    lazy forward would check for code and re-enter nn.Module.__call__ on every call."""
    lazy = compiled if isinstance(compiled, _LazyGraphModule) else getattr(compiled, "__self__", None)
    if not isinstance(lazy, _LazyGraphModule):
        return compiled
    if lazy is compiled:
        _LazyGraphModule.force_recompile(lazy)
        return compiled
    if getattr(compiled, "__func__", None) is not _LazyGraphModule._lazy_forward:
        return compiled
    _LazyGraphModule.force_recompile(lazy)
    return lazy.forward


def _forget_source_with(gm):
    """torch.fx keeps the generated source of every GraphModule it compiles, for tracebacks, in
    a process-wide cache (and linecache) that nothing ever empties: about a kilobyte per graph,
    forever. The graph's own entries go when the graph does (each recompile's, when a backend
    changes the graph and generates code again)."""
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
