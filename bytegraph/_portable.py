"""Values of one process made portable to another and back, for warm-start records.

A record may hold: constants as they are; modules, classes and functions by where they are
imported from (a function also by its fingerprint: code, defaults and what it closes over, so
an edited helper is not taken for the old one); a function a module holds under its name and a
custom autograd.Function's graph target, found where they live; a code object by its content;
an nn.Module or tensor an entry pins by identity as Pinned: its type and which of the other
pinned objects it is, rebound to this process's object found at the same place. Writer makes
values portable (raising NotPortable); Reader makes them this process's again, checking as it
goes, reading the frame's values through Frame.
"""

import enum
import hashlib
import pickle
import sys
import types

import torch

from bytegraph import _classify
from bytegraph._extension import _C


CONSTANT_TYPES = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), torch.dtype, torch.device,
                  torch.layout, torch.memory_format)


class NotPortable(Exception):
    """This entry depends on something another process cannot find again."""


def code_digest(code):
    """A digest of what a code object does: its bytecode, constants (nested code included),
    names, flags, location and line table; the same in every process for the same source."""
    digest = hashlib.sha256()
    _digest_code(code, digest)
    return digest.hexdigest()


def _digest_code(code, digest):
    for part in (code.co_code, code.co_linetable, code.co_exceptiontable):
        digest.update(len(part).to_bytes(8, "little") + part)
    digest.update(repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_flags,
                        code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_filename,
                        code.co_qualname, code.co_firstlineno)).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _digest_code(const, digest)
        else:
            digest.update(stable_repr(const).encode() + b"\x00")


def stable_repr(value):
    """repr, except that a frozenset's order (string hashing is randomised per process) is fixed."""
    if isinstance(value, frozenset):
        return "frozenset({" + ", ".join(sorted(stable_repr(item) for item in value)) + "})"
    if isinstance(value, tuple):
        return "(" + ", ".join(stable_repr(item) for item in value) + ",)"
    return repr(value)


class Pinned:
    """An object the entry pins by identity that is rebound by place: an nn.Module or a tensor
    (parameter, buffer) of this process found where the recorded one was."""

    def __init__(self, type_, group):
        self.type = type_
        self.group = group


class Module:
    def __init__(self, name):
        self.name = name


class ModuleDict:
    def __init__(self, name):
        self.name = name


class Function:
    """A function by where it is imported from, and what it does: its code and defaults."""

    def __init__(self, function, fingerprint):
        self.function = function
        self.fingerprint = fingerprint


def function_fingerprint(function, seen=None):
    """A function's code digest, default values and the contents of its closure cells: a
    helper whose source changed, its defaults or what it closes over included, is another
    function. None where one of them cannot be compared (value_fingerprint)."""
    seen = {} if seen is None else seen  # id -> order of the objects being fingerprinted
    seen[id(function)] = len(seen)
    parts = [code_digest(function.__code__)]
    for value in (function.__defaults__, function.__kwdefaults__):
        parts.append(value_fingerprint(value, seen))
    for cell in function.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:
            value = None  # an empty cell
        parts.append(value_fingerprint(value, seen))
    return None if any(part is None for part in parts) else tuple(parts)


def value_fingerprint(value, seen):
    """What a closure cell or a default holds, comparable across processes: constants as they
    are, functions by their fingerprints, classes, modules and enum members by name, and
    containers and plain objects (a decorator's settings) by what they hold. None for
    anything else (a module or a tensor, an object with slots)."""
    if isinstance(value, types.FunctionType):
        if id(value) in seen:  # a decorator's wrapper and the function it wraps reach each other
            return ("seen before", seen[id(value)])
        return function_fingerprint(value, seen)
    if isinstance(value, types.MethodType):  # torch.no_grad()'s decorator holds a bound method
        parts = (value_fingerprint(value.__func__, seen), value_fingerprint(value.__self__, seen))
        return None if None in parts else ("method",) + parts
    if isinstance(value, (type, types.ModuleType)):
        return (type(value).__name__, getattr(value, "__module__", None),
                value.__qualname__ if isinstance(value, type) else value.__name__)
    if isinstance(value, enum.Enum):
        return ("enum", type(value).__module__, type(value).__qualname__, value.name)
    if isinstance(value, CONSTANT_TYPES):
        return stable_repr(value)
    if id(value) in seen:
        return ("seen before", seen[id(value)])
    seen[id(value)] = len(seen)
    if type(value) in (tuple, list):
        items = [value_fingerprint(item, seen) for item in value]
    elif type(value) is dict:
        items = [(value_fingerprint(k, seen), value_fingerprint(v, seen)) for k, v in value.items()]
        items = None if any(None in pair for pair in items) else items
    elif type(value) is frozenset:
        return stable_repr(value) if all(isinstance(item, CONSTANT_TYPES) for item in value) else None
    elif isinstance(value, (torch.nn.Module, torch.Tensor)) or not hasattr(value, "__dict__") \
            or type(value).__module__ == "builtins":
        return None
    else:
        attributes = sorted(vars(value).items())
        items = [(name, value_fingerprint(item, seen)) for name, item in attributes]
        items = None if any(part is None for _, part in items) else items
        return None if items is None else ("object", type(value).__module__, type(value).__qualname__, tuple(items))
    if items is None or any(item is None for item in items):
        return None
    return (type(value).__name__, tuple(items))


class ModuleAttribute:
    """A function a module holds under its name though it was made elsewhere (torch's
    boolean_dispatch functions), found there again and compared by fingerprint."""

    def __init__(self, module, name, fingerprint):
        self.module = module
        self.name = name
        self.fingerprint = fingerprint


class AutogradApply:
    """The graph target calling a custom autograd.Function's apply (_classify), by its class
    and the fingerprints of the class's forward, setup_context and backward."""

    def __init__(self, cls, fingerprint):
        self.cls = cls
        self.fingerprint = fingerprint


def autograd_function_fingerprint(cls):
    parts = []
    for name in ("forward", "setup_context", "backward", "jvp", "vmap"):
        method = cls.__dict__.get(name)
        method = method.__func__ if isinstance(method, (staticmethod, classmethod)) else method
        parts.append(function_fingerprint(method) if isinstance(method, types.FunctionType) else None)
    return tuple(parts)


class Code:
    """A code object an entry pins, by its content (found at its place, then compared)."""

    def __init__(self, digest):
        self.digest = digest


class Writer:
    """Turns this process's values into portable ones (raising NotPortable)."""

    def __init__(self):
        self.pinned = {}  # id(obj) -> (Pinned, obj)

    def constant(self, value):
        if isinstance(value, CONSTANT_TYPES):
            return value
        if isinstance(value, (tuple, list, frozenset)) and type(value) in (tuple, list, frozenset):
            return type(value)(self.constant(item) for item in value)
        if type(value) is slice:
            return slice(self.constant(value.start), self.constant(value.stop), self.constant(value.step))
        if isinstance(value, torch.Size):
            return value
        if type(value) is dict:
            return {self.constant(k): self.constant(v) for k, v in value.items()}
        raise NotPortable(f"a value of type {type(value).__name__}")

    def named(self, obj):
        """A module, class or function, by where it is imported from."""
        if isinstance(obj, types.ModuleType):
            if sys.modules.get(obj.__name__) is not obj:
                raise NotPortable(f"module {obj.__name__} outside sys.modules")
            return Module(obj.__name__)
        if isinstance(obj, dict):
            name = obj.get("__name__")
            module = sys.modules.get(name) if isinstance(name, str) else None
            if module is None or getattr(module, "__dict__", None) is not obj:
                raise NotPortable("a dict that is no module's globals")
            return ModuleDict(name)
        try:
            same = pickle.loads(pickle.dumps(obj)) is obj
        except Exception:
            same = False
        if not same:
            return self._found_otherwise(obj)
        if isinstance(obj, types.FunctionType):
            fingerprint = function_fingerprint(obj)
            if fingerprint is None:
                raise NotPortable(f"{obj.__qualname__} has defaults or a closure that cannot be compared")
            return Function(obj, fingerprint)
        return obj

    def _found_otherwise(self, obj):
        cls = next((cls for cls, target in list(_classify._APPLY_TARGETS.items()) if target is obj), None)
        if cls is not None:
            return AutogradApply(self.named(cls), autograd_function_fingerprint(cls))
        module, name = getattr(obj, "__module__", None), getattr(obj, "__name__", None)
        if isinstance(obj, types.FunctionType) and isinstance(module, str) and isinstance(name, str) \
                and getattr(sys.modules.get(module), name, None) is obj:
            fingerprint = function_fingerprint(obj)
            if fingerprint is not None:
                return ModuleAttribute(module, name, fingerprint)
        raise NotPortable(f"{short(obj)} cannot be found again by name")

    def value(self, obj):
        """An object an ID_MATCH pins: by name, or rebound by place (modules, tensors)."""
        if isinstance(obj, (torch.nn.Module, torch.Tensor)):
            entry = self.pinned.get(id(obj))
            if entry is None:
                entry = self.pinned[id(obj)] = (Pinned(self.named(type(obj)), len(self.pinned)), obj)
            return entry[0]
        if isinstance(obj, CONSTANT_TYPES):
            return obj
        if isinstance(obj, types.CodeType):
            return Code(code_digest(obj))
        return self.named(obj)

    def source(self, source):
        return self._spec(source.spec())

    def _spec(self, spec):
        kind, name, index, key, base = spec
        if kind in ("stride", "storage_offset", "viewed_dict"):
            raise NotPortable(f"a {kind} source")
        if kind == "held":
            key = self.named(key)
        elif kind in ("item", "stored_item"):
            key = self.constant(key)
        return (kind, name, index, key, None if base is None else self._spec(base))


def short(obj):
    text = repr(obj)
    return text if len(text) < 80 else text[:77] + "..."


def tensor_metadata(tensor):
    return (type(tensor), tensor.dtype, tensor.device, tuple(tensor.shape), tuple(tensor.stride()),
            tensor.requires_grad, str(torch._C._dispatch_keys(tensor)), tensor.is_leaf)


class Frame:
    """The values a frame's guards read (its argument slots, globals, builtins and closure),
    read through the guards' own accessors."""

    def __init__(self, frame_info, slots):
        function = frame_info.function
        self.slots = list(slots)
        self.globals = function.__globals__
        found = function.__builtins__
        self.builtins = found if isinstance(found, dict) else found.__dict__
        self.closure = function.__closure__

    def value(self, spec):
        found = _C.guards.read_source(_C.guards.source_from_spec(spec), self.slots, self.globals, self.builtins,
                                      self.closure)
        if found is _C.guards.UNBOUND:
            raise NotPortable(f"no value at {_C.guards.source_from_spec(spec)!r}")
        return found

    def passes(self, tree):
        """Whether a guard tree passes on this frame."""
        return tree.check_locals(self.slots, self.globals, self.builtins, self.closure)


class Reader:
    """Makes the portable values of one entry this process's again, checking as it goes."""

    def __init__(self):
        self.pinned = {}  # group -> object found for it

    def named(self, value):
        if isinstance(value, Module):
            module = sys.modules.get(value.name)
            if module is None:
                raise NotPortable(f"module {value.name} is not imported")
            return module
        if isinstance(value, ModuleDict):
            return self.named(Module(value.name)).__dict__
        if isinstance(value, ModuleAttribute):
            found = getattr(sys.modules.get(value.module), value.name, None)
            if not isinstance(found, types.FunctionType) or function_fingerprint(found) != value.fingerprint:
                raise NotPortable(f"{value.module}.{value.name} changed")
            return found
        if isinstance(value, AutogradApply):
            cls = self.named(value.cls)
            if autograd_function_fingerprint(cls) != value.fingerprint:
                raise NotPortable(f"autograd.Function {cls.__qualname__} changed")
            return _classify.autograd_apply_target(cls.apply)
        if isinstance(value, Function):
            if function_fingerprint(value.function) != value.fingerprint:
                raise NotPortable(f"{value.function.__qualname__} changed")
            return value.function
        return value

    def source(self, spec):
        kind, name, index, key, base = spec
        if kind == "held":
            key = self.named(key)
        return (kind, name, index, key, None if base is None else self.source(base))

    def pin(self, pinned, obj):
        if type(obj) is not self.named(pinned.type):
            raise NotPortable(f"a {type(obj).__name__} where a {pinned.type.__name__} was")
        found = self.pinned.setdefault(pinned.group, obj)
        if found is not obj:
            raise NotPortable("one pinned place holds another object than before")
        return obj


def same_code(code, digest):
    if not isinstance(code, types.CodeType) or code_digest(code) != digest:
        raise NotPortable("a function's code changed")
    return code
