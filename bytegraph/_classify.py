"""How the tracer treats each Python object it reads: `classify(obj)` gives the kind's name
(csrc/trace/bridge.cpp maps the names to its enum), with the tables behind it — constant
types, graph ops, folded queries and pure functions, the rules `graph_rules` sets — and the
answers to the tracer's questions about tensor attributes. The tracer reads these through
`bytegraph._bridge`, which re-exports them.
"""

from __future__ import annotations

import builtins
import collections
import enum
import re
import sys
import types
import typing
import weakref

import torch
from torch._library import opaque_object


# Every object the tracer reads is classified once here (csrc/trace/bridge.cpp maps the kind
# names to its enum). Callables fall in exactly one class:
#   graph op        "torch_function": recorded as a call_function node. Only ATen-backed
#                   callables (torch's C op namespaces, torch.ops, Tensor methods) and the
#                   public functions of torch.nn.functional / torch.functional.
#   inlined         "user_function": Python code, torch's own helpers included (dead pure
#                   calls then vanish instead of becoming nodes).
#   folded          "folded": a query whose answer under tracing is known (is_compiling() is
#                   True, torch.jit.is_scripting() is False, has_torch_function() is False).
#   folded for real "pure_function": run on constant arguments (math.*, torch.Size(...)).
#   a break         "graph_break" / "disabled" / "unknown": explicit breaks, functions
#                   wrapped by torch.compiler.disable, and any C function it does not know
#                   (RNG state, profiler, I/O): nothing unknown enters a graph.

_CONSTANT_TYPES = (int, float, bool, str, bytes, complex, type(None), type(Ellipsis), type(NotImplemented),
                   torch.dtype, torch.device, torch.layout, torch.memory_format, torch.Size,
                   torch.finfo, torch.iinfo, types.CodeType, range, slice,
                   # Compiled regular expressions and their matches are immutable: their
                   # methods on constants fold (unittest's assertRaisesRegex searches one).
                   re.Pattern, re.Match,
                   # Type annotations (a nested function's, evaluated when it is made): typing's
                   # aliases and variables are immutable.
                   types.GenericAlias, types.UnionType, typing._BaseGenericAlias, typing._SpecialForm,
                   typing.TypeVar)
_FOLDABLE_MODULES = ("math", "operator", "_operator")
# Profilers: context managers that do nothing in compiled code, as under torch.compile.
_PROFILER_CONTEXTS = (torch.profiler.profile, torch.autograd.profiler.profile,
                      torch.autograd.profiler.record_function)
# Constructors of constants: folded on constant arguments.
_CONSTANT_CONSTRUCTORS = (torch.Size, torch.device, torch.finfo, torch.iinfo)

# C namespaces whose functions are ATen operators (torch.add is torch._C._VariableFunctions.add).
_OP_NAMESPACES = ("_VariableFunctions", "_nn", "_linalg", "_fft", "_special", "_nested", "_sparse")
# Python modules whose public functions are operators on tensors.
_OP_PYTHON_MODULES = ("torch.nn.functional", "torch.functional")


# Py_TPFLAGS_HEAPTYPE and Py_TPFLAGS_IMMUTABLETYPE. A class statement (or type()) makes a heap
# type whose attributes can be set; C extensions make heap types too (more of them with each
# release: _io's and collections.deque from 3.12), and those are immutable.
_HEAP_TYPE = 1 << 9
_IMMUTABLE_TYPE = 1 << 8


def _is_python_class(cls) -> bool:
    """Made by a class statement or type(), not by C code."""
    return cls.__flags__ & (_HEAP_TYPE | _IMMUTABLE_TYPE) == _HEAP_TYPE


def _collect_graph_ops():
    ids = set()
    for name in _OP_NAMESPACES:
        namespace = getattr(torch._C, name, None)
        if namespace is None:
            continue
        for attr in dir(namespace):
            obj = getattr(namespace, attr, None)
            if isinstance(obj, types.BuiltinFunctionType):
                ids.add(id(obj))
    return frozenset(ids)


_GRAPH_OP_IDS = _collect_graph_ops()


def _folded_queries():
    """{id(function): (function, result under tracing)} for queries whose traced answer is known."""
    table = {}

    def add(fn, result):
        if fn is not None:
            table[id(fn)] = (fn, result)

    add(torch.compiler.is_compiling, True)
    add(getattr(torch.compiler, "is_dynamo_compiling", None), True)
    add(getattr(torch.compiler, "is_exporting", None), False)
    add(getattr(torch._utils, "is_compiling", None), True)
    add(torch.jit.is_scripting, False)
    add(torch.jit.is_tracing, False)
    add(getattr(torch._C, "_get_tracing_state", None), None)
    # The tracer dispatches __torch_function__ itself where an op is recorded (torch functions
    # are recorded, not inlined), so code it inlines never needs to: these are False.
    for name in ("_has_torch_function", "_has_torch_function_unary", "_has_torch_function_variadic"):
        add(getattr(torch._C, name, None), False)
    add(getattr(torch._C, "_log_api_usage_once", None), None)
    # MultiheadAttention's fast path (_native_multi_head_attention) is skipped under make_fx,
    # which is how AOTAutograd and inductor retrace a graph: True, as torch.compile answers,
    # so the graph holds the decomposed attention a backend can take apart, never the fused op.
    add(getattr(torch.nn.modules.activation, "_is_make_fx_tracing", None), True)
    return table


_FOLDED = _folded_queries()
# Registered by bytegraph.is_compiling and friends (see register_folded).
_EXTRA_FOLDED = {}
# Process-wide queries that read configuration, not tensors: run for real on constants.
_PURE_TORCH_QUERIES = frozenset(id(fn) for fn in (
    torch.is_grad_enabled, torch.get_default_dtype, torch.is_inference_mode_enabled,
    torch.are_deterministic_algorithms_enabled, torch.cuda.is_available, torch.cuda.device_count,
    torch.is_autocast_enabled, torch.get_autocast_dtype if hasattr(torch, "get_autocast_dtype") else None,
    # The per-device forms of those and whether a device type has autocast at all (a fact of
    # the build); the global-state guard compares each autocast setting once a trace read one.
    getattr(torch, "get_autocast_gpu_dtype", None), getattr(torch, "get_autocast_cpu_dtype", None),
    getattr(torch, "is_autocast_cpu_enabled", None), getattr(torch._C, "_is_autocast_available", None),
    getattr(torch._C, "_is_any_autocast_enabled", None),
    torch.backends.mps.is_available, torch.distributed.is_available,
    torch._C._infer_size,  # the broadcast shape of two sizes: an error, or the same answer each time
) if fn is not None)


# Whether saved-tensors hooks are disabled: the query and the two switches (what
# torch.autograd.graph.disable_saved_tensors_hooks calls), modelled by the tracer, which has
# the global-state guard compare that state only when a trace used them.
_SAVED_TENSORS_HOOKS_STATE = frozenset(id(fn) for fn in (
    torch._C._autograd._saved_tensors_hooks_get_disabled_error_message,
    torch._C._autograd._saved_tensors_hooks_disable,
    torch._C._autograd._saved_tensors_hooks_enable,
))

# Which scaled-dot-product-attention backends may run, and in what order: the switches and
# queries torch.nn.attention.sdpa_kernel calls. Modelled by the tracer like the above.
_SDP_BACKENDS_STATE = frozenset(id(getattr(torch._C, name)) for name in (
    *(f"_set_sdp_use_{backend}" for backend in ("flash", "mem_efficient", "math", "cudnn", "overrideable")),
    *(f"_get_{backend}_sdp_enabled" for backend in ("flash", "mem_efficient", "math", "cudnn", "overrideable")),
    "_set_sdp_priority_order", "_get_sdp_priority_order",
) if hasattr(torch._C, name))


_IMMUTABLE_OWNER_TYPES = (str, bytes, int, float, complex, tuple, frozenset)
# Functions of the standard library whose answer depends on their arguments alone: folded on
# constants. collections.namedtuple makes a class: the class made at trace time stands for the
# one each eager call would make (as under torch.compile).
_PURE_STDLIB_FUNCTIONS = frozenset(id(fn) for fn in (
    sys.intern, collections.namedtuple,
    re.compile, re.match, re.search, re.fullmatch, re.escape))


def register_folded(fn, result):
    """Calls of `fn` in traced code evaluate to `result` (for bytegraph's own queries)."""
    _EXTRA_FOLDED[id(fn)] = (fn, result)
    _forget_class_kinds()


def folded_result(fn):
    """The value a call of a "folded" callable has under tracing."""
    entry = _FOLDED.get(id(fn)) or _EXTRA_FOLDED.get(id(fn))
    if entry is None or entry[0] is not fn:
        raise KeyError(f"{fn!r} is not a folded callable")
    return entry[1]


def _is_graph_op(obj) -> bool:
    if id(obj) in _GRAPH_OP_IDS:
        return True
    if isinstance(obj, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return True
    if isinstance(obj, types.FunctionType):
        return obj.__module__ in _OP_PYTHON_MODULES and not obj.__name__.startswith("_")
    if isinstance(obj, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        # torch.Tensor.add used as a function.
        owner = getattr(obj, "__objclass__", None)
        return isinstance(owner, type) and issubclass(torch.Tensor, owner) and owner is not object
    return False


def _is_dynamo_graph_break(obj) -> bool:
    # Only if the user's program imported torch._dynamo itself (reading graph_break from it
    # loads it, see _lazy_dynamo).
    import sys

    from bytegraph import _lazy_dynamo

    if not _lazy_dynamo.loaded():
        return False
    return obj is getattr(sys.modules["torch._dynamo"], "graph_break", None)


_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict,
               torch.nn.ParameterList, torch.nn.ParameterDict)


def _is_leaf_module(module) -> bool:
    """A module of torch.nn's own that holds no submodule (Linear, Conv2d, LayerNorm, GELU,
    Dropout, LSTM) is one call_module node. One that holds submodules (TransformerEncoderLayer,
    TransformerEncoder, MultiheadAttention) has its forward inlined as a user module's is: such
    forwards pick a fused kernel (_transformer_encoder_layer_fwd) or the decomposed ops from
    training, grad mode and the arguments, which the trace answers and guards as eager does,
    where a backend retracing a call_module with make_fx (AOTAutograd) always gets the slow
    path. Asked of the instance: a leaf is pinned by identity, and either answer stays right
    if children come or go later (the leaf runs the real module, the inlined forward guards
    each child it reads)."""
    cls = type(module)
    if not (cls.__module__ or "").startswith("torch.nn.modules") or cls in _CONTAINERS:
        return False
    # Read from the instance's dict: a module whose torch.nn.Module.__init__ has not run has
    # no _modules (classify() is asked about a bare instance before one is made in a trace).
    return not module.__dict__.get("_modules")


def _is_distributed_tensor_class(cls) -> bool:
    """A tensor subclass of torch.distributed that is no traceable wrapper subclass: its ops carry
    state the fakes cannot copy, so a frame that reads one runs it eagerly rather than compute a
    wrong answer. DTensor and AsyncCollectiveTensor flatten (__tensor_flatten__) and are traced."""
    if hasattr(cls, "__tensor_flatten__"):
        return False
    return any(getattr(base, "__module__", "").startswith("torch.distributed") for base in cls.__mro__)


def _opaque_kind(obj):
    """torch's opaque types (torch._library.opaque_object): objects the compiler treats as
    constants, which is how torch.compile reads DTensor's placements (value types, compared by
    value) and device meshes and process groups (reference types, pinned by identity). Their
    value-type classes are constructors of constants (Shard(0))."""
    if isinstance(obj, type):
        return "pure_function" if _opaque_type_kind(obj) == "value" else None
    return "constant" if _opaque_type_kind(type(obj)) is not None else None


_OPAQUE_TYPE_KINDS = weakref.WeakKeyDictionary()  # class -> "value", "reference" or None
_opaque_registrations = [-1]  # how many types torch had registered when the answers were cached


def _opaque_type_kind(cls):
    """Whether `cls` is one of torch's opaque types, and which kind; asked of most objects a
    trace wraps, so answered once per class while no type is registered anew (torch registers
    DeviceMesh when torch.distributed.tensor loads, maybe after a mesh was first seen)."""
    registered = len(opaque_object._OPAQUE_TYPES)
    if registered != _opaque_registrations[0]:
        _OPAQUE_TYPE_KINDS.clear()
        _opaque_registrations[0] = registered
    try:
        return _OPAQUE_TYPE_KINDS[cls]
    except KeyError:
        pass
    except TypeError:  # a class that cannot be weakly referenced
        return None

    kind = None
    if opaque_object.is_opaque_type(cls):
        kind = "value" if opaque_object.is_opaque_value_type(cls) else "reference"
    _OPAQUE_TYPE_KINDS[cls] = kind
    return kind


def is_opaque_object(obj) -> bool:
    """An instance of one of torch's opaque types (a placement, a device mesh)."""
    return _opaque_type_kind(type(obj)) is not None


def _opaque_method_kind(method):
    """A method bound to one of torch's opaque objects, as the type registered its members:
    run for real at trace time where it says so (USE_REAL: `mesh.size()`, `placement.is_shard()`,
    folded on constant arguments), else inlined where it is Python; a C method of an immutable
    value type folds too. Other C methods of a reference type (a process group's collectives)
    are breaks. None for any other method."""
    cls = type(method.__self__)
    if not opaque_object.is_opaque_type(cls):
        return None
    if opaque_object.get_member_type(cls, method.__name__) == opaque_object.MemberType.USE_REAL:
        return "pure_function"
    if isinstance(method.__func__, types.FunctionType):
        return "user_method"
    return "pure_function" if opaque_object.is_opaque_value_type(cls) else "unknown"


def subclass_metadata_guard(cls):
    """How the flatten metadata of wrapper subclass `cls` is compared with the traced one, where
    bytegraph knows better than ==: a function (traced, now) -> bool, or None."""
    if not (cls.__module__ or "").startswith("torch.distributed"):
        return None
    from torch.distributed.tensor import DTensor

    return _dtensor_metadata_guard if issubclass(cls, DTensor) else None


def _dtensor_metadata_guard(traced, now):
    """DTensor flattens to (placements, global tensor meta, shard order, requires_grad): compared
    without the global shape and stride, which the tensor's own guard checks (symbolic sizes
    by the shape guards), as torch.compile's DTENSOR_SPEC_MATCH does."""
    if not (isinstance(traced, tuple) and len(traced) == 4 and isinstance(now, tuple) and len(now) == 4):
        return traced == now
    return (traced[0] == now[0] and traced[2] == now[2] and traced[3] == now[3]
            and getattr(traced[1], "dtype", None) == getattr(now[1], "dtype", None))


def compared_by_value(obj) -> bool:
    """Whether a constant that is no Python literal is guarded by == (an opaque value type: a
    placement made anew each call equals the traced one) rather than by identity."""
    return _opaque_type_kind(type(obj)) == "value"


_DEFAULT_TORCH_FUNCTION = torch.Tensor.__torch_function__.__func__


def _has_custom_torch_function(cls) -> bool:
    handler = getattr(cls, "__torch_function__", None)
    handler = getattr(handler, "__func__", handler)
    base = torch.Tensor.__torch_function__
    return handler is not getattr(base, "__func__", base) and handler is not torch._C._disabled_torch_function_impl


# What the tracer does with a tuple as tuple itself does it: a named tuple class that defines
# one of these in Python is no plain tuple (its `a + b` is its own __add__).
_TUPLE_PROTOCOL = ("__getitem__", "__iter__", "__len__", "__contains__", "__hash__", "__bool__", "__eq__",
                   "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__radd__", "__mul__", "__rmul__")


def _is_named_tuple_class(cls) -> bool:
    """collections.namedtuple classes and structseqs (torch.return_types.max, os.stat_result):
    tuples whose items are named fields and whose tuple behaviour is not overridden."""
    fields = getattr(cls, "_fields", None)
    if isinstance(fields, tuple) and callable(getattr(cls, "_make", None)):
        return all(getattr(cls, name, None) is getattr(tuple, name, None) for name in _TUPLE_PROTOCOL)
    return isinstance(getattr(cls, "n_sequence_fields", None), int)


def _classify_callable(obj):
    """The class of a callable, or None if `obj` is not one the table knows."""
    if id(obj) in _FOLDED or id(obj) in _EXTRA_FOLDED:
        return "folded"
    if _marked(obj, "_torchdynamo_disable") or _marked(obj, "_bytegraph_disable"):
        return "disabled"
    if _is_dynamo_graph_break(obj):
        return "graph_break"
    if _is_graph_op(obj) or _is_autograd_function_apply(obj):
        return "torch_function"
    if id(obj) in _PURE_TORCH_QUERIES or id(obj) in _PURE_STDLIB_FUNCTIONS:
        return "pure_function"
    if not isinstance(obj, type) and _is_numpy_callable(obj):
        return "numpy_function"
    return None


def _is_numpy_callable(obj) -> bool:
    """One of NumPy's functions (np.mean, np.fft.fft, ufuncs such as np.sin); numpy.random's draw
    from NumPy's generator and stay outside traces."""
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        module = type(obj).__module__
    if module.startswith("numpy.random"):
        return False
    if module == "numpy" and getattr(obj, "__self__", None) is not None:
        return False  # a method of a generator (np.random.randn is RandomState.randn)
    return module == "numpy" or module.startswith("numpy.")


_FUNCTION_APPLY = torch.autograd.Function.apply.__func__


def _is_autograd_function_apply(obj) -> bool:
    """`MyFunction.apply` of a custom torch.autograd.Function: one graph node, so its own
    backward runs (the engine records it when the node runs; AOT backends trace it too)."""
    return (isinstance(obj, types.MethodType) and obj.__func__ is _FUNCTION_APPLY
            and isinstance(obj.__self__, type) and issubclass(obj.__self__, torch.autograd.Function))


_APPLY_TARGETS = weakref.WeakKeyDictionary()


def autograd_apply_target(bound_apply):
    """The graph node's target for `MyFunction.apply`: one function per class, named after it.
    (FX writes a callable from torch's modules by its import path, and the bound classmethod
    advertises torch.autograd.function as its module.)"""
    cls = bound_apply.__self__
    target = _APPLY_TARGETS.get(cls)
    if target is None:
        def apply(*args, **kwargs):
            return cls.apply(*args, **kwargs)

        apply.__name__ = apply.__qualname__ = f"{cls.__name__}_apply"
        # FX writes a function of torch's modules as an import path, which this one is not
        # (DTensor's _FromTorchTensor): such a target is held by the graph module instead.
        apply.__module__ = __name__ if cls.__module__.startswith("torch") else cls.__module__
        target = _APPLY_TARGETS[cls] = apply
    return target


def _marked(obj, name) -> bool:
    """A marker set on a function (graph_break, comptime, disable wrappers), read without
    running any attribute hook of other objects."""
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    if not isinstance(obj, types.FunctionType):
        return False
    return obj.__dict__.get(name, False) is True


# Kinds chosen by the user (bytegraph.graph_rules: allow_in_graph, disallow_in_graph):
# id(obj) -> (obj, kind). The object is held, so its id stays its own.
_RULES = {}


def set_rule(obj, kind):
    """Make classify(obj) return `kind`."""
    _RULES[id(obj)] = (obj, kind)
    _forget_class_kinds()


def _kinds_of_exact_types():
    """Types all of whose instances (of exactly that type) classify() puts in one kind: the
    bulk of what a trace asks about (op results, sizes, containers), answered by one lookup.
    Marks are only read on functions, so only a user rule could change these answers."""
    from torch._subclasses.fake_tensor import FakeTensor

    kinds = {cls: "constant" for cls in (int, float, bool, str, bytes, complex, type(None), type(Ellipsis), type(NotImplemented),
                                          torch.dtype, torch.device, torch.Size, slice, range)}
    kinds.update({cls: "constant" for cls in (torch.layout, torch.memory_format, torch.finfo, torch.iinfo,
                                              types.CodeType)})
    kinds.update({list: "list", dict: "dict", tuple: "tuple", set: "set"})
    kinds.update({type({}.keys()): "dict_view", type({}.values()): "dict_view", type({}.items()): "dict_view"})
    # Python modules (each global read through one), and the ordered dicts torch.nn keeps its
    # hooks in (read by every torch.nn forward that checks for hooks).
    kinds.update({types.ModuleType: "python_module", collections.OrderedDict: "object",
                  collections.defaultdict: "object"})
    for cls in (torch.Tensor, torch.nn.Parameter, FakeTensor):
        if not _has_custom_torch_function(cls):
            kinds[cls] = "tensor"
    return kinds


def classify(obj) -> str:
    """How the tracer wraps `obj`: one of the kind names above."""
    rule = _RULES.get(id(obj))
    if rule is not None and rule[0] is obj:
        return rule[1]
    kind = _KIND_OF_EXACT_TYPE.get(type(obj))
    if kind is not None:
        return kind
    known = _KIND_OF_BUILTIN.get(id(obj))
    if known is not None and known[0] is obj:
        return known[1]
    kind = _kind_by_class(obj)
    if kind is None:
        kind = _classify_by_rules(obj)
        _remember_kind_by_class(obj, kind)
    return kind


# Answers that depend on a class alone, kept per class: a trace asks about the same config
# objects, dataclass sentinels and classes hundreds of times. Kept: the kind of plain classes
# themselves, and "object" for the non-callable instances of a plain class that does not
# define __class__ (every test on the way to "object" reads the instance's class and nothing
# else). Each is kept with the class's __mro__ (a new tuple if its bases are assigned anew).
# Dropped when a rule, a folded function or torch's opaque types change.
_KIND_OF_CLASS = weakref.WeakKeyDictionary()  # class -> (its kind, its __mro__)
_OBJECT_CLASSES = weakref.WeakKeyDictionary()  # class whose instances are "object" -> its __mro__
_class_kinds_registrations = [-1]  # torch's opaque-type count when they were kept


def _forget_class_kinds():
    _KIND_OF_CLASS.clear()
    _OBJECT_CLASSES.clear()


def _kind_by_class(obj):
    registered = len(opaque_object._OPAQUE_TYPES)
    if registered != _class_kinds_registrations[0]:
        _forget_class_kinds()
        _class_kinds_registrations[0] = registered
        return None
    cls = type(obj)
    if cls is type:
        kept = _KIND_OF_CLASS.get(obj)
        return kept[0] if kept is not None and kept[1] is obj.__mro__ else None
    if type(cls) is type and _OBJECT_CLASSES.get(cls) is cls.__mro__:
        return "object"
    return None


def _remember_kind_by_class(obj, kind):
    cls = type(obj)
    try:
        if cls is type:
            _KIND_OF_CLASS[obj] = (kind, obj.__mro__)
        elif (kind == "object" and type(cls) is type and not callable(obj)
              and not any("__class__" in vars(base) for base in cls.__mro__[:-1])):
            _OBJECT_CLASSES[cls] = cls.__mro__
    except TypeError:  # a class that cannot be weakly referenced
        pass


def _classify_by_rules(obj) -> str:
    if _marked(obj, "_bytegraph_graph_break"):
        return "graph_break"
    if _marked(obj, "_bytegraph_comptime"):
        return "comptime"
    if obj is torch.no_grad or obj is torch.enable_grad or obj is torch._C._set_grad_enabled or obj is torch.set_grad_enabled:
        return "grad_mode"
    if obj is torch.amp.autocast_mode.autocast:
        return "autocast"
    if isinstance(obj, type) and obj in _PROFILER_CONTEXTS:
        return "null_context"
    if obj is sys.exc_info or obj is getattr(sys, "exception", None):
        return "handled_exception"
    if isinstance(obj, type) and obj in _CONSTANT_CONSTRUCTORS:
        return "pure_function"
    if isinstance(obj, torch.Tensor):
        if _is_distributed_tensor_class(type(obj)):
            return "distributed_tensor"
        # A subclass with its own __torch_function__ is traced through it (the tracer's
        # dispatch), a wrapper subclass's (NestedTensor's) as well.
        return "tensor"
    if obj is _DEFAULT_TORCH_FUNCTION:
        return "default_torch_function"
    if obj is torch._C.DisableTorchFunctionSubclass or obj is torch._C.DisableTorchFunction:
        return "subclass_dispatch_switch"
    if obj is torch.set_default_dtype or obj is torch._C._set_default_dtype:
        return "default_dtype_switch"
    if id(obj) in _SAVED_TENSORS_HOOKS_STATE:
        return "saved_tensors_hooks"
    if id(obj) in _SDP_BACKENDS_STATE:
        return "sdp_backends"
    if isinstance(obj, _CONSTANT_TYPES) or isinstance(obj, enum.Enum):
        return "constant"
    opaque = _opaque_kind(obj)
    if opaque is not None:
        return opaque
    if type(obj) is frozenset:
        return "constant" if all(classify(item) == "constant" for item in obj) else "set"
    if isinstance(obj, torch.nn.Module):
        return "leaf_module" if _is_leaf_module(obj) else "module"
    if isinstance(obj, tuple) and (type(obj) is tuple or _is_named_tuple_class(type(obj))):
        return "tuple"
    if type(obj) is list:
        return "list"
    if type(obj) is dict:
        return "dict"
    if type(obj) in (type({}.keys()), type({}.values()), type({}.items())):
        return "dict_view"
    if isinstance(obj, types.ModuleType):
        return "python_module"
    if callable(obj):
        kind = _classify_callable(obj)
        if kind is not None:
            return kind
    if isinstance(obj, types.FunctionType):
        return "user_function"
    if isinstance(obj, types.MethodType):
        opaque = _opaque_method_kind(obj)
        if opaque is not None:
            return opaque
        return "user_method" if isinstance(obj.__func__, types.FunctionType) else "unknown"
    if isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        owner = getattr(obj, "__self__", None)
        if owner is builtins or obj is tuple.__new__:  # namedtuple's _make calls tuple.__new__
            return "builtin"
        if isinstance(owner, type) and issubclass(owner, dict) and obj.__name__ == "fromkeys":
            return "builtin"  # OrderedDict.fromkeys, defaultdict.fromkeys: a new dict of the class
        # A method bound to an immutable constant ("a,b".split, frozenset(kwlist).__contains__,
        # which keyword.iskeyword is): its answer depends on its arguments alone.
        if type(owner) in _IMMUTABLE_OWNER_TYPES and classify(owner) == "constant":
            return "pure_function"
        module = getattr(obj, "__module__", None)
        if module in _FOLDABLE_MODULES or (isinstance(owner, types.ModuleType) and
                                           owner.__name__ in _FOLDABLE_MODULES):
            return "pure_function"
        return "unknown"
    if isinstance(obj, type):
        if obj.__module__ == "builtins" or obj is collections.deque:  # deque: made in a trace
            return "builtin"
        # OrderedDict and defaultdict, C classes, are made in a trace like dict subclasses (their
        # items symbolic).
        dict_classes = (collections.OrderedDict, collections.defaultdict)
        return "user_class" if _is_python_class(obj) or obj in dict_classes else "class"
    # OrderedDict and defaultdict instances are objects with dict storage, as instances of dict
    # subclasses are: their items read, changed and written back.
    if _is_python_class(type(obj)) or type(obj) in (collections.OrderedDict, collections.defaultdict):
        return "object"
    return "unknown"


_KIND_OF_EXACT_TYPE = _kinds_of_exact_types()
# The builtins module's C functions and classes (len, isinstance, int, ...), classified once:
# immutable, they carry no marks, and a user rule is looked up before this table.
_KIND_OF_BUILTIN = {id(value): (value, _classify_by_rules(value)) for value in vars(builtins).values()
                    if type(value) in (types.BuiltinFunctionType, type)}


def tensor_attribute_kind(name: str) -> str:
    """`constant` for metadata read from the fake, `method` for Tensor methods (graph ops),
    `break` for methods with effects outside the graph, `class` for __class__, `grad` for
    .grad (read from the real tensor), else `property` (recorded as getattr)."""
    if name in _TENSOR_CONSTANT_ATTRS:
        return "constant"
    if name in _TENSOR_BREAK_ATTRS:
        return "break"
    if name == "__class__":
        return "class"
    if name == "grad":
        return "grad"
    attr = getattr(torch.Tensor, name, None)
    if attr is None:
        return "missing"
    if callable(attr) and not isinstance(attr, property):
        return "method"
    return "property"


_TENSOR_CONSTANT_ATTRS = frozenset({
    "shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_sparse", "is_quantized",
    "is_meta", "layout", "is_leaf", "is_mkldnn", "is_nested",
})
# Tensor methods and attributes that act outside the graph (autograd hooks and engine, host
# memory, storage identity, in-place metadata changes): a graph break, never a node.
_TENSOR_BREAK_ATTRS = frozenset({
    "backward", "register_hook", "register_post_accumulate_grad_hook", "retain_grad", "numpy",
    "data_ptr", "storage", "untyped_storage", "_typed_storage", "share_memory_",
    "set_", "record_stream", "apply_", "map_", "map2_", "__array__", "__reduce_ex__",
    "requires_grad_", "_version", "grad_fn", "storage_offset", "is_shared", "pin_memory",
})
# Tensor methods whose result depends only on metadata: called on the fake, folded to constants.
TENSOR_CONSTANT_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
    "is_floating_point", "is_complex", "element_size", "get_device", "type",
})
