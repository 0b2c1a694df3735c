"""What generated code does when a compiled graph raises while it runs.

Fake tensors cannot see every failure: an index out of range, a singular matrix or a
data-dependent assertion fails only on real values. Raised from the graph call, such an error
would escape a try block around the op (the graph is called where the trace ends) and skip
the side effects the program made before the op (generated code writes them after the graph
returns). So generated code catches the graph's exception and runs the frame's own bytecode
from its start instead (csrc/codegen/eager_fallback.h): the op raises again in its place.

That re-run is exact only when the failed graph left nothing behind (writes into tensors the
graph made itself are invisible outside it). A graph that writes in place into its inputs (or
into views of them), draws random numbers or calls a module as a whole that has buffers
(batch norm updates its statistics) or drops out at random gets no fallback, and its error
propagates from the graph call. The tracer keeps such writes and the ops an except or finally
block covers in separate graphs (Tracer::keep_outside_writes_apart_from_handlers), so that
what a handler sees can always fall back.
"""

import logging

import torch

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


# Modules that draw random numbers while training.
_RANDOM_MODULES = (torch.nn.modules.dropout._DropoutNd, torch.nn.RReLU)


def _module_leaves_no_trace(module):
    """Whether calling `module` (a leaf of the graph) changes nothing and draws nothing."""
    if next(module.buffers(), None) is not None:
        return False
    if any(getattr(part, "inplace", False) for part in module.modules()):  # nn.ReLU(inplace=True)
        return False
    return not any(part.training and isinstance(part, _RANDOM_MODULES) for part in module.modules())


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


def can_run_again(gm):
    """Whether running the original code after `gm` failed part-way is the same as running it
    instead of `gm`: the graph writes into no input and draws no random numbers."""
    outside = []  # the traced values of the graph's inputs and attributes
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            if _value(node) is not None:
                outside.append(_value(node))
        elif node.op == "call_module":
            if not _module_leaves_no_trace(gm.get_submodule(node.target)):
                return False
        elif node.op in ("call_function", "call_method"):
            if _is_random(node.target):
                return False
            if not _input_aliasing.is_in_place(node) and _writes_an_argument(node.target):
                return False
            if any(_aliases_any(_value(target), outside) for target in _written(node)):
                return False
    return True


def handler(code, graph_name):
    """The callable generated code calls with the graph's exception before running the
    original code. It re-raises what is not an Exception (KeyboardInterrupt, SystemExit) and
    bytegraph's own errors (a backend returning the wrong outputs must be reported, not
    papered over)."""
    where = f"{code.co_qualname} ({code.co_filename}:{code.co_firstlineno})"
    logged = False

    def on_failure(error):
        nonlocal logged
        if not isinstance(error, Exception) or isinstance(error, BytegraphError):
            raise error
        if not logged:
            logged = True
            log.info("%s of %s raised %s: %s; the frame runs uncompiled this call, so the error is raised "
                     "(or caught) where the program has the op", graph_name, where, type(error).__name__, error)

    return on_failure
