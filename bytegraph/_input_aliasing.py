"""Which tensor inputs of a compiled graph share storage: a backend that functionalizes
(aot_eager, inductor) compiles an in-place write to one input for the aliasing it saw, and
run with other aliasing the write lands in the wrong tensor (`f(a, a[0])` compiled, then
`f(b, t)` zeroes part of b instead of t). Graphs that write to their inputs are checked on
every call: when the pattern differs from the compile's, the captured graph runs as it is
(its ops on the real tensors, as the eager backend does), which is right for any aliasing.
"""

import inspect
import operator

import torch

# Python operators that write into their first operand.
_IN_PLACE_OPERATORS = frozenset(
    getattr(operator, name) for name in ("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow",
                                         "iand", "ior", "ixor", "ilshift", "irshift", "imatmul", "setitem"))


def _is_in_place_name(target):
    try:
        if target in _IN_PLACE_OPERATORS:
            return True
    except TypeError:  # not hashable
        return False
    name = target if isinstance(target, str) else getattr(target, "__name__", "")
    return name.endswith("_") and not name.startswith("_")


# function -> the position of its `inplace` parameter (F.relu(x, inplace=True)), or None
_inplace_positions = {}


def _inplace_position(target):
    if isinstance(target, str):
        return None
    try:
        return _inplace_positions[target]
    except KeyError:
        pass
    except TypeError:  # not hashable
        return None
    try:
        names = list(inspect.signature(target).parameters)
    except (TypeError, ValueError):  # a builtin without a signature
        names = []
    position = _inplace_positions[target] = names.index("inplace") if "inplace" in names else None
    return position


def writes_first_operand(target, args, kwargs):
    """Whether an op with this target (a function, or a method's name) and these arguments
    writes into its first operand: an in-place name (`add_`, `operator.iadd`) or `inplace=True`."""
    if _is_in_place_name(target):
        return True
    position = _inplace_position(target)
    if position is None:
        return False
    if kwargs and "inplace" in kwargs:
        return kwargs["inplace"] is True
    return len(args) > position and args[position] is True


def is_in_place(node):
    """Whether the op of `node` writes into its first operand."""
    return (node.op in ("call_function", "call_method")
            and writes_first_operand(node.target, node.args, node.kwargs))


def writes_in_place(gm):
    """Whether any op of the graph writes into a tensor (which may be, or view, an input)."""
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        if is_in_place(node) or node.kwargs.get("out") is not None:
            return True
    return False


def pattern(args):
    """For each argument: the position of the first tensor argument sharing its storage
    (itself if none), or -1 for what is not a tensor with storage."""
    first = {}
    found = []
    for position, value in enumerate(args):
        if not isinstance(value, torch.Tensor):
            found.append(-1)
            continue
        try:
            key = value.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):  # no storage (sparse, a subclass): alone
            found.append(position)
            continue
        found.append(first.setdefault(key, position) if key else position)
    return tuple(found)


def guarded(compiled, gm, example_inputs):
    """`compiled`, falling back to the graph's own forward when the inputs alias otherwise
    than at compile time; `compiled` itself where the graph writes nothing in place."""
    if not writes_in_place(gm):
        return compiled
    expected = pattern(example_inputs)

    def run(*args):
        if pattern(args) == expected:
            return compiled(*args)
        return gm(*args)

    return run


# ---- asked by the tracer of every recorded op (through bytegraph._bridge) ----


def written_tensors(target, args, kwargs):
    """The tensors an op writes into (its first operand if it works in place, its `out=`), or
    None: asked of every recorded op, so the common answer is quick."""
    out = kwargs.get("out") if kwargs else None
    in_place = bool(args) and writes_first_operand(target, args, kwargs)
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
