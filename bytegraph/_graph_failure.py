"""What generated code does when a compiled graph raises while it runs.

Fake tensors cannot see every failure: an index out of range, a singular matrix or a
data-dependent assertion fails only on real values. Raised from the graph call, such an error
would escape a try block around the op (the graph is called where the trace ends) and skip
the side effects the program made before the op (generated code writes them after the graph
returns). So generated code catches the graph's exception and runs the frame's own bytecode
from its start instead (csrc/codegen/eager_fallback.h): the op raises again in its place.

That re-run is exact only when the failed graph left nothing behind (writes into tensors the
graph made itself are invisible outside it; a graph that draws random numbers puts its
generators back when it fails, so the re-run draws what eager draws). A graph that writes in
place into its inputs (or into views of them), updates running statistics it is passed or
calls a module as a whole that has buffers (batch norm) gets no fallback, and its error
propagates from the graph call. The tracer (Tracer::keep_failures_recoverable, asking
op_leaves_a_trace and module_leaves_a_trace below) keeps such ops and the ops an except or
finally block covers in separate graphs, so that what a handler sees can always fall back, and
keeps every tensor op of such a graph before every Python side effect, so that the side
effects made before a failing op are not lost.
"""

import functools
import inspect
import logging

import torch
import torch.utils._pytree
from torch.nn.modules.batchnorm import _NormBase

from bytegraph import _input_aliasing
from bytegraph.exc import BytegraphError

log = logging.getLogger("bytegraph")

# The local generated code keeps the graph's exception in (csrc/codegen/eager_fallback.cpp).
FAILURE_LOCAL = "___graph_failure"


# Functions that update running statistics they are passed (in training) without saying so
# in their aten schema (their native kernels do: `Tensor(a!) running_mean`).
_UPDATES_RUNNING_STATS = frozenset({"batch_norm", "instance_norm"})


def _aten_packet(target):
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    packet = getattr(torch.ops.aten, name.rstrip("_"), None) if name else None
    return packet if isinstance(packet, torch._ops.OpOverloadPacket) else None


def _writes_an_argument(target):
    """Whether the op may write into a tensor argument other than through an in-place name
    or `out=` (an aten schema argument marked `(a!)`, running statistics)."""
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    if name in _UPDATES_RUNNING_STATS:
        return True
    packet = _aten_packet(target)
    if packet is None:
        return False
    # Positional tensors marked written; `out=` is seen by name, and list overloads (aten.sort
    # also sorts Python lists in place) write no tensor.
    return any(argument.alias_info is not None and argument.alias_info.is_write and not argument.kwarg_only
               and str(argument.type) in ("Tensor", "Optional[Tensor]")
               for overload in packet.overloads() for argument in getattr(packet, overload)._schema.arguments)


def _is_random(target):
    packet = _aten_packet(target)
    if packet is None:
        return False
    return any(torch.Tag.nondeterministic_seeded in getattr(packet, overload).tags for overload in packet.overloads())


# Arguments that turn a dropout-like op into a deterministic one: a probability of zero, or
# training off (scaled_dot_product_attention(dropout_p=0.0), F.dropout(x, training=False)).
_PROBABILITY_PARAMETERS = ("p", "dropout_p")
_TRAINING_PARAMETERS = ("training", "train")


def _parameter_names(target):
    """The names of the op's parameters in order (its Python signature, else its aten
    schema's), or ()."""
    if not isinstance(target, str):
        try:
            return tuple(inspect.signature(target).parameters)
        except (TypeError, ValueError):
            pass
    packet = _aten_packet(target)
    if packet is None:
        return ()
    names = [argument.name for argument in packet.default._schema.arguments] if "default" in packet.overloads() else []
    return tuple(names[1:]) if isinstance(target, str) else tuple(names)  # a method's self is not passed


def _argument(names, args, kwargs, candidates):
    """The value passed for the first of `candidates` the op has, or None."""
    for name in candidates:
        if kwargs and name in kwargs:
            return kwargs[name]
        if name in names and names.index(name) < len(args):
            return args[names.index(name)]
    return None


def draws_random_numbers(target, args, kwargs):
    """Whether the op draws from a random number generator with these arguments."""
    if not _is_random(target):
        return False
    names = _parameter_names(target)
    if _argument(names, args, kwargs, _TRAINING_PARAMETERS) is False:
        return False
    probability = _argument(names, args, kwargs, _PROBABILITY_PARAMETERS)
    return not (type(probability) in (int, float) and probability == 0)


# Modules that draw random numbers while training.
_RANDOM_MODULES = (torch.nn.modules.dropout._DropoutNd, torch.nn.RReLU)


def _module_draws_random_numbers(module):
    return any(part.training and isinstance(part, _RANDOM_MODULES) for part in module.modules())


def module_leaves_a_trace(module):
    """Whether calling `module` as a whole (a leaf of the graph) changes anything that
    outlives the graph: its buffers (batch norm's statistics) or, in place, its input."""
    for part in module.modules():
        if getattr(part, "inplace", False):  # nn.ReLU(inplace=True)
            return True
        if isinstance(part, _NormBase):
            # statistics are updated in training only (the module's training flag is guarded)
            if part.training and part.track_running_stats:
                return True
        elif next(part.buffers(recurse=False), None) is not None:
            return True  # buffers of a kind not known to stay as they are
    return False


def _value(node):
    value = node.meta.get("example_value") if isinstance(node, torch.fx.Node) else None
    return value if isinstance(value, torch.Tensor) else None


def _aliases_any(value, outside):
    """Whether `value` shares storage with one of `outside` (unknown counts as yes)."""
    if value is None:
        return True
    try:
        return any(torch._C._is_alias_of(value, other) for other in outside)
    except (RuntimeError, TypeError):
        return True


def _written(node):
    """The tensor nodes an op writes into: its first operand if it works in place, its `out=`."""
    written = []
    if _input_aliasing.is_in_place(node) and node.args:
        written.append(node.args[0])
    out = node.kwargs.get("out")
    written.extend(out if isinstance(out, (tuple, list)) else [out] if out is not None else [])
    return written


def _memoized(function):
    """`function` of an op's target, remembered per target (ops are few, graphs many)."""
    known = {}

    def remembered(target):
        try:
            return known[target]
        except KeyError:
            found = known[target] = function(target)
            return found
        except TypeError:  # not hashable
            return function(target)

    return remembered


_is_random = _memoized(_is_random)
_writes_an_argument = _memoized(_writes_an_argument)
_parameter_names = _memoized(_parameter_names)


def op_leaves_a_trace(target, args, kwargs):
    """Whether an op (a function, or a method's name) changes what outlives the graph by
    itself, whatever tensors it is given: it writes into an argument without working in place
    by name (running statistics). A write into the first operand counts only where that tensor
    comes from outside the graph, which the caller knows. Random numbers do not count: the
    generators are put back before the graph runs again (restoring_on_failure)."""
    return not _input_aliasing.writes_first_operand(target, args, kwargs) and _writes_an_argument(target)


def can_run_again(gm):
    """Whether running the original code after `gm` failed part-way is the same as running it
    instead of `gm`: the graph writes into no input (random numbers are drawn again from the
    same generator state, see restoring_on_failure)."""
    outside = []  # the traced values of the graph's inputs and attributes
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            if _value(node) is not None:
                outside.append(_value(node))
        elif node.op == "call_module":
            if module_leaves_a_trace(gm.get_submodule(node.target)):
                return False
        elif node.op in ("call_function", "call_method"):
            if op_leaves_a_trace(node.target, node.args, node.kwargs):
                return False
            if any(_aliases_any(_value(target), outside) for target in _written(node)):
                return False
    return True


def default_generator(device):
    """The default generator of `device`, or None where it is not known."""
    if device.type == "cpu":
        return torch.default_generator
    try:
        module = torch.get_device_module(device.type)
        index = device.index if device.index is not None else module.current_device()
        return module.default_generators[index]
    except (AttributeError, IndexError, RuntimeError, TypeError):
        return None


def _generators_drawn_from(gm):
    """The generators the graph's random ops draw from (the default ones of their outputs'
    devices, or one passed as `generator=`), or None where one is not known."""
    generators = {}
    for node in gm.graph.nodes:
        if node.op == "call_module":
            random = _module_draws_random_numbers(gm.get_submodule(node.target))
        elif node.op in ("call_function", "call_method"):
            random = draws_random_numbers(node.target, node.args, node.kwargs)
        else:
            continue
        if not random:
            continue
        passed = node.kwargs.get("generator")
        if isinstance(passed, torch.Generator):
            generators[id(passed)] = passed
            continue
        devices = {value.device for value in torch.utils._pytree.tree_leaves(node.meta.get("example_value"))
                   if isinstance(value, torch.Tensor)}
        if not devices:
            return None
        for device in devices:
            generator = default_generator(device)
            if generator is None:
                return None
            generators[id(generator)] = generator
    return list(generators.values())


def _switches_grad_mode(gm):
    return any(node.op == "call_function" and node.target is torch._C._set_grad_enabled for node in gm.graph.nodes)


def restoring_on_failure(gm, compiled, generators=()):
    """`compiled`, or, for a graph that switches grad mode or draws from `generators`,
    `compiled` putting that state back when it raises (one wrapper, one frame per call):
    - grad mode: the error leaves a no_grad block inside the graph, whose exit eager runs;
    - generators: the original code run after the failure draws the numbers eager would."""
    switches = _switches_grad_mode(gm)
    if not switches and not generators:
        return compiled

    @functools.wraps(compiled)
    def run(*args):
        enabled = torch.is_grad_enabled()
        states = [generator.get_state() for generator in generators]
        try:
            return compiled(*args)
        except BaseException:
            if switches:
                torch._C._set_grad_enabled(enabled)
            for generator, state in zip(generators, states):
                generator.set_state(state)
            raise

    return run


def failure_plan(gm):
    """Whether the original code can run after `gm` failed: the generators whose states to put
    back first (a list, maybe empty), or None where it cannot. Reads the traced values in the
    nodes' meta."""
    return _generators_drawn_from(gm) if can_run_again(gm) else None


_PLANNED_HERE = object()


def for_generated_code(gm, compiled, code, graph_name, grad_enabled_at_entry, generators=_PLANNED_HERE):
    """What generated code calls: the compiled graph (putting grad mode back if it raises
    inside a grad-mode block, and its generators' states where it draws random numbers and
    can run again) and the failure handler, or None where the graph cannot run again (or
    draws from generators it cannot name). `generators`: failure_plan(gm) where it was made
    before (a graph rebuilt without its traced values)."""
    if generators is _PLANNED_HERE:
        generators = failure_plan(gm)
    restoring = restoring_on_failure(gm, compiled, generators or ())
    return restoring, (handler(code, graph_name, grad_enabled_at_entry) if generators is not None else None)


def handler(code, graph_name, grad_enabled_at_entry):
    """The callable generated code calls with the graph's exception before running the
    original code. It re-raises what is not an Exception (KeyboardInterrupt, SystemExit) and
    bytegraph's own errors (a backend returning the wrong outputs must be reported, not
    papered over). The original code restarts in the grad mode the frame was entered with
    (its guards checked it): a graph that failed inside a no_grad block left the mode off."""
    where = f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"
    logged = False

    def on_failure(error):
        nonlocal logged
        torch._C._set_grad_enabled(grad_enabled_at_entry)
        if not isinstance(error, Exception) or isinstance(error, BytegraphError):
            raise error
        if not logged:
            logged = True
            log.info("%s of %s raised %s: %s; the frame runs uncompiled this call, so the error is raised "
                     "(or caught) where the program has the op", graph_name, where, type(error).__name__, error)

    return on_failure
