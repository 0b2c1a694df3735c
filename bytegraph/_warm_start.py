"""Warm start: each compiled frame's entry written to disk, so that another process running
the same program installs it without tracing the frame again.

With `config.warm_start_dir` set (BYTEGRAPH_WARM_START_DIR), every cache entry a frame gets is
also written to a record file named by a key over everything the entry was made from: the
code object's content, the Python, torch and bytegraph builds, the backend and its settings,
the capture options and the settings that change a trace. A record holds, per entry:

- the guards as the trace logged them, each value in its portable form (`_portable`:
  constants as they are, modules, classes and functions by where they are imported from, a
  function also by its fingerprint, a code object by its content, a tensor by its metadata,
  an nn.Module or tensor the entry pins by identity rebound to this process's object at the
  same place);
- the graph, node by node, with the module attributes it calls bound by those places;
- the generated code, marshalled, with the compiled graph and its failure handler left as
  slots to fill, and the other objects it holds (a class it builds its result with, a
  module's globals it writes to) by where they are imported from.

A frame that had nothing to capture (no tensor work) runs as it is from then on; its record
says so, and the next process runs it as it is without tracing it first.

On a miss of a code object, the records written for it are tried first: each guard is made
again from the values this frame has (a pinned object must be at the same place with the same
type and the same identity relations, a tensor must have the recorded metadata, the global
state must read as recorded), the tree built from them must pass on the frame, and then the
graph goes to the backend (inductor finds its own cache) and the code is filled in. Anything
that differs, fails to load or to check makes the frame trace as usual, never a wrong entry;
a record file that does not read back is reported and replaced.

Not written (the frame is traced in every process): entries with symbolic shapes, with a
tensor subclass's flatten metadata or an inlined __torch_function__, graphs holding values
other than modules and tensors the guards pin (constants made in the frame), a backend given
as a callable rather than a name, or generated code holding an object that cannot be found by
name.
"""

import dataclasses
import enum
import hashlib
import logging
import marshal
import operator
import os
import pickle
import sys
import tempfile
import types

import torch

from bytegraph import _dynamic, _fx_graph, _graph_failure, config
from bytegraph._portable import (Code, Frame, NotPortable, Pinned, Reader, Writer, code_digest, same_code,
                                  tensor_metadata)
from bytegraph._extension import _C

log = logging.getLogger("bytegraph.warm_start")

_FORMAT = 1
_MAGIC = b"bytegraph-warm-start\n"
_GRAPH_SLOT = "\x00bytegraph warm start: compiled graph"
_FAILURE_SLOT = "\x00bytegraph warm start: failure handler"
_CONSTANT_SLOT = "\x00bytegraph warm start: constant "
# Settings whose value changes what a trace produces (the others change how calls run).
_TRACE_SETTINGS = ("capture_scalar_outputs", "automatic_dynamic_shapes", "automatic_dynamic_shapes_mark_as",
                   "force_parameter_static_shapes", "assume_static_by_default", "optimize_ddp")


@dataclasses.dataclass
class Stats:
    """What warm starts did in this process (tests and benchmarks read it)."""

    written: int = 0      # entries written to a record
    not_written: int = 0  # entries that could not be recorded (see the debug log for why)
    loaded: int = 0       # entries installed from a record without tracing
    rejected: int = 0     # recorded entries that did not apply to a frame
    corrupted: int = 0    # record files that did not read back


stats = Stats()


def enabled():
    return bool(config.warm_start_dir)


# --- keys ---------------------------------------------------------------------------------


_build_id = None


def _bytegraph_build():
    """A digest of bytegraph itself, its extension and its Python: another build never reads
    this one's records."""
    global _build_id
    if _build_id is None:
        digest = hashlib.sha256()
        package = os.path.dirname(os.path.abspath(__file__))
        # The extension by its size and modification time (reading its megabytes would cost a
        # tenth of a second): a rebuilt core is another build.
        status = os.stat(_C.__file__)
        digest.update(repr((os.path.basename(_C.__file__), status.st_size, status.st_mtime_ns)).encode())
        files = sorted(os.path.join(folder, name) for folder, _, names in os.walk(package)
                       for name in names if name.endswith(".py"))
        for path in files:
            digest.update(os.path.relpath(path, package).encode())
            with open(path, "rb") as source:
                for block in iter(lambda: source.read(1 << 20), b""):
                    digest.update(block)
        _build_id = digest.hexdigest()
    return _build_id


def frame_key(code, backend_key, options):
    """The record file's name for `code` compiled with that backend and those options."""
    parts = (
        _FORMAT, sys.version, torch.__version__, getattr(torch.version, "git_version", ""), _bytegraph_build(),
        code_digest(code), repr(backend_key), repr((options.fullgraph, options.dynamic)),
        repr([(name, getattr(config, name)) for name in _TRACE_SETTINGS]),
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _record_path(key):
    return os.path.join(config.warm_start_dir, key[:2], key + ".record")


# --- portable values ----------------------------------------------------------------------


class _NodeRef:
    def __init__(self, name):
        self.name = name


def _portable_guards(result, writer):
    """The trace's guard log in portable form."""
    guards = []
    for kind, source, obj, length, other, unchecked_sizes, unchecked_strides in result.guard_journal:
        spec = writer.source(source)
        if kind == "type":
            payload = writer.named(obj)
        elif kind == "id":
            payload = writer.value(obj)
        elif kind in ("equals", "value", "dict_keys", "lacks_key", "lacks_attr"):
            payload = writer.constant(obj)
        elif kind == "tensor":
            if unchecked_sizes or unchecked_strides:
                raise NotPortable("symbolic sizes")
            payload = writer.named(type(obj)), tensor_metadata(obj)[1:]
        elif kind in ("length", "size", "none"):
            payload = length
        elif kind == "set_items":
            payload = (writer.named(obj[0]), writer.constant(obj[1]))
        elif kind == "same_object":
            payload = writer.source(other)
        else:
            raise NotPortable(f"a {kind} guard")
        guards.append((kind, spec, payload))
    return guards


def _portable_graph(gm, writer):
    """The graph node by node; the module attributes it reads, by the group of the pinned
    object they are (each is pinned by an ID_MATCH guard)."""
    nodes = []
    attributes = {}
    for node in gm.graph.nodes:
        target = node.target
        if node.op in ("call_module", "get_attr"):
            obj = operator.attrgetter(target)(gm)
            entry = writer.pinned.get(id(obj))
            if entry is None or entry[1] is not obj:
                raise NotPortable(f"graph attribute {target} that no guard pins")
            attributes[target] = entry[0].group
        elif node.op == "call_function":
            target = writer.named(target)
        if not _fx_graph.writable((node.args, node.kwargs)):
            raise NotPortable(f"arguments of {node.name}")
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: _NodeRef(n.name))
        nodes.append((node.op, node.name, target, _constants_only(args, writer), _constants_only(kwargs, writer),
                      node.meta.get("stack_trace"), _value_spec(node.meta.get("example_value"))))
    return nodes, attributes


def _value_spec(value):
    """A node's traced value as metadata: tensors by size, stride, dtype, device and
    requires_grad (static: every size an int), in the tuples and lists that hold them."""
    if isinstance(value, torch.Tensor):
        if type(value).__name__ != "FakeTensor" and type(value) is not torch.Tensor:
            raise NotPortable(f"a traced value of type {type(value).__name__}")
        return ("tensor", tuple(int(size) for size in value.shape), tuple(int(s) for s in value.stride()),
                value.dtype, value.device, value.requires_grad)
    if isinstance(value, (tuple, list)) and type(value) in (tuple, list):
        return (type(value).__name__, [_value_spec(item) for item in value])
    if value is None or type(value) in (bool, int, float):
        return ("constant", value)
    raise NotPortable(f"a traced value of type {type(value).__name__}")


def _example_value(spec, mode):
    kind, *rest = spec
    if kind == "tensor":
        size, stride, dtype, device, requires_grad = rest
        with mode:
            return torch.empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad)
    if kind in ("tuple", "list"):
        items = [_example_value(item, mode) for item in rest[0]]
        return tuple(items) if kind == "tuple" else items
    return rest[0]


def _constants_only(value, writer):
    """A node's arguments with node references kept and every other value portable."""
    if isinstance(value, _NodeRef):
        return value
    if isinstance(value, (tuple, list)):
        return (tuple if isinstance(value, tuple) else list)(_constants_only(item, writer) for item in value)
    if isinstance(value, dict):
        return {writer.constant(k): _constants_only(v, writer) for k, v in value.items()}
    if isinstance(value, (enum.Enum, torch._ops.OpOverload)):
        return writer.named(value)
    return writer.constant(value)


def _portable_code(new_code, compiled, on_failure, writer):
    """The generated code marshalled, its compiled graph and failure handler as slots, and the
    other objects it holds (a class it builds the result with, a module's globals it writes
    to, a builtin) as slots filled by name; (bytes, the named objects in slot order)."""
    slots = {id(compiled): _GRAPH_SLOT, id(on_failure): _FAILURE_SLOT} if compiled is not None else {}
    consts, named = [], []
    for const in new_code.co_consts:
        if const is not None and id(const) in slots:
            consts.append(slots[id(const)])
            continue
        try:
            marshal.dumps(const)
        except ValueError:
            named.append(writer.named(const))
            const = _CONSTANT_SLOT + str(len(named) - 1)
        consts.append(const)
    try:
        return marshal.dumps(new_code.replace(co_consts=tuple(consts))), named
    except ValueError:
        raise NotPortable("generated code holding an object") from None


# --- writing ------------------------------------------------------------------------------


def save(key, frame_info, slots, result, new_code, compiled, on_failure, gm, outcome):
    """Append this entry to the frame's record (best effort: a failure only costs a warm
    start). Before it is written, its guards are made again from the record on this frame
    and must come out as the trace's own, guard for guard."""
    code = frame_info.f_code
    try:
        entry = _entry(result, new_code, compiled, on_failure, gm, outcome, _dynamic.frame_shapes(code))
        _check_round_trip(entry, result, frame_info, slots)
    except NotPortable as why:
        stats.not_written += 1
        log.debug("%s: entry not recorded for warm starts: %s", code.co_qualname, why)
        return
    except Exception as error:  # never let the record cost the compile
        stats.not_written += 1
        log.warning("bytegraph: could not record %s for warm starts: %s: %s", code.co_qualname,
                    type(error).__name__, error)
        return
    entries = _read(key) or []
    entries = (entries + [entry])[-config.cache_size_limit:]
    try:
        _write(key, entries)
    except OSError as error:
        log.warning("bytegraph: could not write the warm-start record of %s: %s", code.co_qualname, error)
        return
    stats.written += 1
    _loaded.setdefault(key, set()).add(entry)


# The record of a frame that had nothing to capture: it runs as it is from then on, in this
# process (the converter marks it so) and in the next, which reads it instead of tracing.
RUNS_AS_IS = "runs as is"
_RUNS_AS_IS_ENTRY = pickle.dumps({"runs_as_is": True})


def save_runs_as_is(key, code):
    entries = _read(key) or []
    if _RUNS_AS_IS_ENTRY in entries:
        return
    try:
        _write(key, entries + [_RUNS_AS_IS_ENTRY])
    except OSError as error:
        log.warning("bytegraph: could not write the warm-start record of %s: %s", code.co_qualname, error)
        return
    stats.written += 1
    _loaded.setdefault(key, set()).add(_RUNS_AS_IS_ENTRY)


def _entry(result, new_code, compiled, on_failure, gm, outcome, shapes):
    if result.fake_mode is not None:
        raise NotPortable("symbolic shapes")
    if result.torch_function_inlined:
        raise NotPortable("an inlined __torch_function__")
    writer = Writer()
    guards = _portable_guards(result, writer)
    distinct = [writer.source(source) for source in result.distinct_sources]
    inputs = [writer.source(source) for source in result.input_sources] if gm is not None else []
    graph = _portable_graph(gm, writer) if gm is not None else None
    failure = _portable_failure_plan(gm) if gm is not None else None
    payload = {
        "guards": guards,
        "distinct": distinct,
        "global_state": (tuple(result.global_state_flags), _global_state_line(result.guards)),
        "inputs": inputs,
        "graph": graph,
        "code": _portable_code(new_code, compiled, on_failure, writer),
        "failure_plan": failure,
        "outcome": outcome,
        # What automatic dynamic shapes had seen of the inputs once traced: a process that
        # installs the entry has seen the same (its guards passed), and recompiles as this one.
        "frame_shapes": (writer.constant({k: list(v) for k, v in shapes.sizes.items()}),
                         writer.constant(dict(shapes.ints))),
    }
    try:
        return pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as error:
        raise NotPortable(f"{type(error).__name__}: {error}") from None


def _check_round_trip(entry, result, frame_info, slots):
    frame = Frame(frame_info, slots)
    rebuilt = _guard_set(pickle.loads(entry), Reader(), frame)
    expected = list(result.guard_set.describe())
    if rebuilt is None or list(rebuilt.describe()) != expected:
        got = [] if rebuilt is None else list(rebuilt.describe())
        differing = sorted(set(got) ^ set(expected))
        raise NotPortable("its guards do not come back from the record: " + "; ".join(differing[:3]))


def _portable_failure_plan(gm):
    """_graph_failure.failure_plan of the traced graph (it reads the traced values, which a
    rebuilt graph lacks): None, or the devices whose default generators it restores."""
    generators = _graph_failure.failure_plan(gm)
    if generators is None:
        return None
    devices = []
    for generator in generators:
        if _graph_failure.default_generator(generator.device) is not generator:
            raise NotPortable("a graph drawing from a generator of its own")
        devices.append(generator.device)
    return devices


def restored_generators(payload):
    """The failure plan of a recorded graph, with this process's generators."""
    devices = payload["failure_plan"]
    return None if devices is None else [_graph_failure.default_generator(device) for device in devices]


def _global_state_line(lines):
    return next((line for line in lines if line.startswith("GLOBAL_STATE")), "")


def _write(key, entries):
    path = _record_path(key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    body = pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL)
    data = _MAGIC + hashlib.sha256(body).digest() + body
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".record-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _read(key):
    """The record's entries (pickled bytes each), or None; a damaged file is reported and removed."""
    path = _record_path(key)
    try:
        with open(path, "rb") as record:
            data = record.read()
    except OSError:
        return None
    header = len(_MAGIC) + 32
    body = data[header:]
    try:
        if not data.startswith(_MAGIC) or hashlib.sha256(body).digest() != data[len(_MAGIC):header]:
            raise ValueError("checksum mismatch")
        entries = pickle.loads(body)
        if not isinstance(entries, list) or not all(isinstance(entry, bytes) for entry in entries):
            raise ValueError("not a list of entries")
    except Exception as error:
        stats.corrupted += 1
        log.warning("bytegraph: the warm-start record %s does not read back (%s); tracing afresh", path, error)
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    return entries


# --- loading ------------------------------------------------------------------------------

# key -> the entries (pickled bytes) installed or written in this process: not tried again.
_loaded = {}


def reset():
    _loaded.clear()
    _resume_codes.clear()


def load(key, code, frame_info, slots, example_values=True):
    """(guard tree, (graph, example inputs, generated code, outcome, generators to restore),
    guard lines) of an entry of `code`'s record that applies to this frame, or None.
    example_values: see _rebuild."""
    entries = _read(key)
    if not entries:
        return None
    tried = _loaded.setdefault(key, set())
    for entry in entries:
        if entry in tried:
            continue
        if entry == _RUNS_AS_IS_ENTRY:
            tried.add(entry)
            stats.loaded += 1
            return RUNS_AS_IS
        try:
            installed = _install(pickle.loads(entry), code, frame_info, slots, example_values)
        except NotPortable as why:
            stats.rejected += 1
            log.debug("%s: warm-start entry does not apply: %s", code.co_qualname, why)
            continue
        except Exception as error:
            stats.rejected += 1
            log.debug("%s: warm-start entry does not apply: %s: %s", code.co_qualname, type(error).__name__, error)
            continue
        if installed is not None:
            tried.add(entry)
            stats.loaded += 1
            return installed
        stats.rejected += 1
    return None


def _install(payload, code, frame_info, slots, example_values):
    frame = Frame(frame_info, slots)
    reader = Reader()
    guard_set = _guard_set(payload, reader, frame)
    if guard_set is None:
        return None
    tree = guard_set.build()
    if not frame.passes(tree):
        return None
    shapes = _dynamic.frame_shapes(code)
    if not shapes.sizes and not shapes.ints:
        sizes, ints = payload["frame_shapes"]
        shapes.sizes.update(sizes)
        shapes.ints.update(ints)
    return tree, _rebuild(payload, reader, frame, example_values), list(guard_set.describe())


def _guard_set(payload, reader, frame):
    guard_set = _C.guards.GuardSet()
    for kind, spec, value in payload["guards"]:
        spec = reader.source(spec)
        source = _C.guards.source_from_spec(spec)
        if kind == "type":
            guard_set.add_type_match(source, reader.named(value))
        elif kind == "id":
            if isinstance(value, Pinned):
                value = reader.pin(value, frame.value(spec))
            elif isinstance(value, Code):
                value = same_code(frame.value(spec), value.digest)
            guard_set.add_id_match(source, reader.named(value))
        elif kind == "equals":
            guard_set.add_equals_match(source, value)
        elif kind == "value":
            guard_set.add_value_match(source, value)
        elif kind == "tensor":
            tensor = frame.value(spec)
            type_, metadata = value
            if not isinstance(tensor, torch.Tensor) or type(tensor) is not reader.named(type_) \
                    or tensor_metadata(tensor)[1:] != metadata:
                return None
            guard_set.add_tensor_match(source, tensor)
        elif kind == "length":
            guard_set.add_length_match(source, value)
        elif kind == "size":
            guard_set.add_size_match(source, value)
        elif kind == "none":
            guard_set.add_none_match(source, bool(value))
        elif kind == "dict_keys":
            guard_set.add_dict_keys_match(source, value)
        elif kind == "set_items":
            guard_set.add_set_match(source, reader.named(value[0]), value[1])
        elif kind == "same_object":
            guard_set.add_same_object(_C.guards.source_from_spec(reader.source(value)), source)
        elif kind == "lacks_key":
            guard_set.add_dict_lacks_key(source, value)
        elif kind == "lacks_attr":
            guard_set.add_lacks_attr(source, value)
        else:
            raise NotPortable(f"a {kind} guard")
    pinned = list(reader.pinned.values())
    if len({id(obj) for obj in pinned}) != len(pinned):
        return None  # two places that held distinct objects now hold one
    guard_set.add_distinct_objects([_C.guards.source_from_spec(reader.source(s)) for s in payload["distinct"]])
    flags, line = payload["global_state"]
    guard_set.add_global_state_now(*flags)
    if _global_state_line(guard_set.describe()) != line:
        return None
    return guard_set


# digest -> the resume function code object the installed entries call: entries of one
# frame that resume at the same place share it, and so share its cache entries, as the resume
# functions codegen caches are shared.
_resume_codes = {}


def _shared_resume_code(code):
    return _resume_codes.setdefault(code_digest(code), code)


def _rebuild(payload, reader, frame, example_values):
    """The graph and generated code of a recorded entry, for this frame's objects; the graph's
    nodes carry fake example values as a trace leaves them where `example_values` (AOTAutograd
    checks them; a graph the eager backend runs as it is needs none)."""
    gm = None
    if payload["graph"] is not None:
        nodes, attributes = payload["graph"]
        root = torch.nn.Module()
        for name, group in attributes.items():
            obj = reader.pinned.get(group)
            if obj is None:
                raise NotPortable(f"graph attribute {name} has no pinned object")
            if isinstance(obj, torch.nn.Module):
                root.add_module(name, obj)
            elif isinstance(obj, torch.nn.Parameter):
                root.register_parameter(name, obj)
            else:
                root.register_buffer(name, obj)
        graph = torch.fx.Graph()
        created = {}

        def resolve(value):
            if isinstance(value, _NodeRef):
                return created[value.name]
            if isinstance(value, (tuple, list)):
                return type(value)(resolve(item) for item in value)
            if isinstance(value, dict):
                return {k: resolve(v) for k, v in value.items()}
            return reader.named(value)

        mode = None
        if example_values:
            from torch._subclasses.fake_tensor import FakeTensorMode

            mode = FakeTensorMode()
        for op, name, target, args, kwargs, stack_trace, value in nodes:
            if op == "call_function":
                target = reader.named(target)
            if op == "output":
                node = graph.output(resolve(args)[0])
            else:
                node = graph.create_node(op, target, resolve(args), resolve(kwargs), name=name)
            if stack_trace:
                node.meta["stack_trace"] = stack_trace
            if mode is not None and op != "output":
                node.meta["example_value"] = _example_value(value, mode)
            created[name] = node
        gm = _fx_graph.GraphModule(root, graph)
    code_bytes, named = payload["code"]
    new_code = marshal.loads(code_bytes)
    constants = [reader.named(value) for value in named]
    new_code = new_code.replace(co_consts=tuple(
        constants[int(const[len(_CONSTANT_SLOT):])] if type(const) is str and const.startswith(_CONSTANT_SLOT)
        else _shared_resume_code(const) if isinstance(const, types.CodeType) else const
        for const in new_code.co_consts))
    inputs = [frame.value(reader.source(spec)) for spec in payload["inputs"]]
    return gm, inputs, new_code, payload["outcome"], restored_generators(payload) if gm is not None else None


def finish(new_code, compiled, on_failure):
    """Fills the slots of recorded code with this process's compiled graph and failure
    handler; None if they do not match the slots the code has."""
    consts = []
    filled = set()
    for const in new_code.co_consts:
        if type(const) is str and const in (_GRAPH_SLOT, _FAILURE_SLOT):
            value = compiled if const == _GRAPH_SLOT else on_failure
            if value is None:
                return None
            filled.add(const)
            consts.append(value)
        else:
            consts.append(const)
    if compiled is not None and _GRAPH_SLOT not in filled or on_failure is not None and _FAILURE_SLOT not in filled:
        return None
    return new_code.replace(co_consts=tuple(consts))
