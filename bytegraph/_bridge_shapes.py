"""The torch bridge for dynamic shapes: symbolic sizes and ints from torch's ShapeEnv.

A trace gets a `Shapes` (through its `_bridge.Session`) the first time one of its inputs is
symbolic; a static trace never builds a ShapeEnv. Everything symbolic is torch's own
machinery: fake tensors whose sizes are `SymInt`s of one `ShapeEnv`, SymInt arithmetic, and the
guards the ShapeEnv records while ops run on those fakes. This module only names sources for
torch, logs what became dynamic or was specialised (artifact `dynamic`), and, once the backend
has run, hands the shape guards to the C++ guard tree as small expression trees over the sizes
and ints they read (see `shape_guards`).
"""

from __future__ import annotations

import contextlib

import dataclasses
import functools
import logging
import math
import operator

import sympy
import torch
import torch._guards
from torch.fx.experimental.symbolic_shapes import (
    ConstraintViolationError,
    DimDynamic,
    GuardOnDataDependentSymNode,  # noqa: F401  (the tracer reads it here)
    ShapeEnv,
    ShapeGuardPythonPrinter,
    StatelessSymbolicContext,
    StrictMinMaxConstraint,
    SubclassSymbolicContext,
)
from torch.utils._python_dispatch import is_traceable_wrapper_subclass
from torch.utils._sympy import functions as sym_functions
from torch.utils._sympy.numbers import int_oo
from torch.utils._sympy.printers import PythonPrinter
from torch.utils._sympy.value_ranges import ValueRanges

from bytegraph._fake_cache import UnfakeableTensor
from bytegraph._shape_spec import ConstraintViolation, DimSpec, SourceName  # noqa: F401  (re-exported)

log = logging.getLogger("bytegraph.dynamic")

SYMBOLIC_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)


class _ShapeEnv(ShapeEnv):
    """torch's ShapeEnv, with symbols numbered in order of creation (s0, s1, ...) rather than
    from a hash of the source name, so that a trace reads like the sizes it saw."""

    def _generate_unique_id(self, source_name):
        index = len(self.unique_ids)
        self.unique_ids.add(index)
        return index


@dataclasses.dataclass
class _Tracked:
    """An input the shape guards read: a tensor (sizes and strides) or an int."""

    name: str
    value: object  # FakeTensor or SymInt
    unchecked_sizes: tuple = ()
    unchecked_strides: tuple = ()
    strict: tuple = ()  # dims marked with mark_dynamic
    # A jagged tensor's ragged size and the strides it scales: nested ints on the real tensor,
    # no number to read, standing for its offsets (the inner tensors' guards check those).
    nested_sizes: tuple = ()
    nested_strides: tuple = ()


_DIM_DYNAMIC = {
    "static": DimDynamic.STATIC,
    "dynamic": DimDynamic.DYNAMIC,
    "duck": DimDynamic.DUCK,
    "unbacked": DimDynamic.UNBACKED,
}


def _free_symbols(values):
    return set().union(*(v.node.expr.free_symbols for v in values if isinstance(v, torch.SymInt)))


def _layout_inputs(fake):
    """(kind, dim, SymInt) for each stride and the storage offset that is a symbol of its own.

    torch gives a stride that follows from the sizes (a dense layout's) an expression in the
    size symbols, and a stride or offset that does not (a matrix's column, a slice starting
    past 0) a symbol of its own. Such symbols are graph inputs too, as they are in
    torch.compile: a backend tracing the graph again must find each one."""
    defined = _free_symbols(fake.shape)
    found = []
    layout = [("stride", dim, stride) for dim, stride in enumerate(fake.stride())]
    layout.append(("offset", -1, fake.storage_offset()))
    for kind, dim, value in layout:
        symbol = symbol_name(value)
        if symbol is not None and value.node.expr not in defined:
            defined.add(value.node.expr)
            found.append((kind, dim, value))
    if not _free_symbols([value for _, _, value in layout]) <= defined:
        # torch builds a stride from sizes and other strides only: this is a safety net
        raise UnfakeableTensor(f"its strides {tuple(fake.stride())} or offset {fake.storage_offset()} hold "
                               f"symbols that neither its sizes {tuple(fake.shape)} nor its own symbols define")
    return found


def _marked_dynamic(tensor):
    """The dims of `tensor` marked dynamic (mark_dynamic, maybe_mark_dynamic, or the marks a
    NestedTensor puts on its own values), or None when none is."""
    from bytegraph._dynamic import _marks

    strict, weak, _static, _ranges, _unbacked = _marks(tensor)
    return (strict | weak) or None


def _nested_dims(real):
    """The dims whose size, and those whose stride, is a nested int on `real` (a jagged
    NestedTensor's ragged dimension): they hold no number a guard could read."""
    if not real.is_nested:
        return (), ()
    sizes = tuple(dim for dim, size in enumerate(real.shape) if isinstance(size, torch.SymInt))
    strides = tuple(dim for dim, stride in enumerate(real.stride()) if isinstance(stride, torch.SymInt))
    return sizes, strides


def _symbolic_context(real, name, dynamic_sizes, constraints):
    """How torch's meta converter makes the sizes of `real` symbols. A traceable wrapper subclass
    (DTensor) is faked from its inner tensors: each gets a context of its own, its sizes
    symbols wherever the outer tensor has one (a sharded dimension follows the global one; a
    tensor of another rank, a nested tensor's values, has all of them symbolic). The inner
    tensors' own guards keep their sizes checked."""
    if not is_traceable_wrapper_subclass(real):
        return StatelessSymbolicContext(dynamic_sizes=dynamic_sizes, constraint_sizes=constraints)
    # Dynamic beyond the dims the tensor marks itself (a NestedTensor's ragged one): the policy
    # (dynamic=True, automatic dynamic) makes the inner tensors' sizes symbols too.
    own_marks = _marked_dynamic(real) or set()
    any_dynamic = any(kind != DimDynamic.STATIC for dim, kind in enumerate(dynamic_sizes) if dim not in own_marks)
    inner_contexts = {}
    for attr in real.__tensor_flatten__()[0]:
        inner = getattr(real, attr)
        if not isinstance(inner, torch.Tensor):
            continue
        if inner.dim() == real.dim():
            inner_sizes = list(dynamic_sizes)
        else:
            # Marked dims (a NestedTensor's values along the ragged dimension, its sequence
            # lengths) are symbols; the rest follow the policy.
            marked = _marked_dynamic(inner) or set()
            inner_sizes = [DimDynamic.DYNAMIC if any_dynamic or dim in marked else DimDynamic.STATIC
                           for dim in range(inner.dim())]
        inner_contexts[attr] = _symbolic_context(inner, f"{name}.{attr}", inner_sizes, [None] * inner.dim())
    return SubclassSymbolicContext(dynamic_sizes=dynamic_sizes, constraint_sizes=constraints,
                                   tensor_source=SourceName(name), shape_env_to_source_to_symbol_cache={},
                                   inner_contexts=inner_contexts)


class Shapes:
    """The symbolic state of one trace: its ShapeEnv and the inputs whose sizes are symbols."""

    def __init__(self, mode):
        self.env = _ShapeEnv(allow_scalar_outputs=False, allow_dynamic_output_shape_ops=False)
        mode.shape_env = self.env
        self.tracked = []
        self._logged_guards = 0
        self._logged_replacements = 0

    # ---- inputs ----------------------------------------------------------------------

    def tensor(self, mode, real, name, dims):
        """The symbolic fake of input `real` (source `name`), dims: a DimSpec per dimension.

        Returns (fake, lifted, unchecked_sizes, unchecked_strides): `lifted` lists
        (kind, dim, symbol name, SymInt) for each size ("size"), stride ("stride") or storage
        offset ("offset", dim -1) that is a plain symbol of its own, the graph inputs that carry the
        symbols; unchecked dims are those the tensor guard leaves to the shape guards."""
        constraints = []
        for spec in dims:
            if spec.kind != "static" and (spec.min is not None or spec.max is not None):
                lower = 0 if spec.min is None else spec.min
                upper = int_oo if spec.max is None else spec.max
                constraints.append(StrictMinMaxConstraint(vr=ValueRanges(lower, upper), warn_only=False))
            else:
                constraints.append(None)
        context = _symbolic_context(real, name, [_DIM_DYNAMIC[spec.kind] for spec in dims], constraints)
        # An unbacked input size is bound by the input itself, not by an op of the graph that
        # would have to return it.
        unbacked = any(spec.kind == "unbacked" for spec in dims)
        try:
            with self.env.ignore_fresh_unbacked_symbols() if unbacked else contextlib.nullcontext():
                fake = mode.from_tensor(real, static_shapes=False, source=SourceName(name), symbolic_context=context)
        except ConstraintViolationError as error:  # a marked size outside its mark_dynamic bounds
            raise ConstraintViolation(f"{name}: {error}") from None
        nested_sizes, nested_strides = _nested_dims(real)
        lifted = [("size", dim, size) for dim, size in enumerate(fake.shape) if symbol_name(size) is not None]
        lifted = tuple((kind, dim, symbol_name(value), value) for kind, dim, value in lifted + _layout_inputs(fake))
        unchecked_sizes = tuple(i for i, size in enumerate(fake.shape) if isinstance(size, torch.SymInt))
        unchecked_strides = tuple(i for i, stride in enumerate(fake.stride()) if isinstance(stride, torch.SymInt))
        strict = tuple(i for i, spec in enumerate(dims) if spec.strict)
        self.tracked.append(_Tracked(name, fake, unchecked_sizes, unchecked_strides, strict, nested_sizes, nested_strides))
        inner = self._track_inner(fake, name) if is_traceable_wrapper_subclass(fake) else ()
        for dim, spec in enumerate(dims):
            if spec.kind != "static" and log.isEnabledFor(logging.INFO):
                size = fake.shape[dim]
                shown = size if isinstance(size, torch.SymInt) and symbol_name(size) else f"{size} (0 and 1 stay static)"
                log.info("%s.size()[%d] is dynamic: %s; it is %s", name, dim, spec.why, shown)
        return fake, tuple(lifted), unchecked_sizes, unchecked_strides, inner

    def _track_inner(self, fake, name):
        """The inner tensors of a wrapper subclass whose sizes are symbolic (a DTensor's local
        shard of a dynamic batch): tracked for the shape guards under their own sources.
        Returns (attribute, unchecked sizes, unchecked strides) for each, what its tensor
        guard leaves to the shape guards."""
        found = []
        for attr in fake.__tensor_flatten__()[0]:
            inner = getattr(fake, attr)
            if not isinstance(inner, torch.Tensor):
                continue
            sizes = tuple(i for i, size in enumerate(inner.shape) if isinstance(size, torch.SymInt))
            strides = tuple(i for i, stride in enumerate(inner.stride()) if isinstance(stride, torch.SymInt))
            if sizes or strides:
                self.tracked.append(_Tracked(f"{name}.{attr}", inner, sizes, strides, ()))
                found.append((attr, sizes, strides))
        return tuple(found)

    def int(self, value, name, why):
        """A SymInt for int input `value` (source `name`)."""
        symint = self.env.create_unspecified_symint_and_symbol(value, SourceName(name), DimDynamic.DYNAMIC)
        self.tracked.append(_Tracked(name, symint))
        log.info("%s is dynamic: %s; it is %s", name, why, symint)
        return symint

    # ---- decisions while tracing ---------------------------------------------------------

    def guard_bool(self, value, where):
        """Python truth of a SymBool (or SymInt): the ShapeEnv guards on the answer."""
        result = bool(value)
        self.log_new_guards(where)
        return result

    def specialize(self, value, reason, where):
        """The concrete value of a SymInt/SymFloat that must be a Python number (`reason`):
        the ShapeEnv guards that it stays this value."""
        what = self._source_text(value)
        concrete = int(value) if isinstance(value, torch.SymInt) else float(value)
        if log.isEnabledFor(logging.INFO):
            log.info("specialised %s to %s: %s\n  at %s", what, concrete, reason, where)
        # The guard and replacement this made are the specialisation just logged.
        self._logged_guards = len(self.env.guards)
        self._logged_replacements = len(self.env.replacements)
        return concrete

    def log_new_guards(self, where):
        """Logs the guards and specialisations recorded since the last call, at `where`."""
        env = self.env
        guards, replacements = env.guards, env.replacements
        if len(guards) == self._logged_guards and len(replacements) == self._logged_replacements:
            return
        if log.isEnabledFor(logging.INFO):
            printer = self._printer()
            for guard in guards[self._logged_guards:]:
                log.info("guard added: %s\n  at %s", _safe_print(printer, guard.expr), where)
            for symbol, expr in list(replacements.items())[self._logged_replacements:]:
                if expr.is_number:
                    log.info("specialised %s (%s) to %s\n  at %s", symbol, self._symbol_source(symbol), expr, where)
        self._logged_guards = len(guards)
        self._logged_replacements = len(replacements)

    def _symbol_source(self, symbol):
        sources = self.env.var_to_sources.get(symbol)
        return sources[0].name if sources else str(symbol)

    def _source_text(self, value):
        expr = value.node.expr
        if isinstance(expr, sympy.Symbol):
            return f"{self._symbol_source(expr)} ({expr})"
        return _safe_print(self._printer(), expr)

    def _printer(self):
        env = self.env
        return ShapeGuardPythonPrinter(env.var_to_sources, lambda source: source.name, env.var_to_sources)

    # ---- guards ----------------------------------------------------------------------------

    def guard_texts(self):
        """The shape guards as text, as they stand now."""
        return [text for _, text in self.shape_guards()["guards"]]

    def shape_guards(self):
        """What the guard tree must check for this trace, after the backend ran (backends add
        guards of their own): {"bindings": [(source name, "size"|"stride"|"int", dim, slot)],
        "guards": [(expression tree, text)]}. Expression trees are tuples: ("int", v),
        ("sym", slot) or (op, operand, ...), or ("python", fn, slots) for what the C++
        evaluator does not know (fn gets the slots' values)."""
        env = self.env
        symbol_to_source = {}  # symbol -> [(source name, kind, dim)], first is its definition
        input_equalities = []  # (source key, expr)
        for tracked in self.tracked:
            if isinstance(tracked.value, torch.SymInt):
                _track(symbol_to_source, input_equalities, (tracked.name, "int", -1), tracked.value, always=True)
                continue
            fake = tracked.value
            for dim, size in enumerate(fake.shape):
                if dim in tracked.nested_sizes:
                    continue
                _track(symbol_to_source, input_equalities, (tracked.name, "size", dim), size,
                       always=dim in tracked.unchecked_sizes)
            for dim, stride in enumerate(fake.stride()):
                if dim in tracked.nested_strides:
                    continue
                _track(symbol_to_source, input_equalities, (tracked.name, "stride", dim), stride,
                       always=dim in tracked.unchecked_strides)
            # The tensor guard never reads the offset; it matters where it is symbolic.
            offset = fake.storage_offset()
            _track(symbol_to_source, input_equalities, (tracked.name, "offset", -1), offset,
                   always=isinstance(offset, torch.SymInt))
            for dim in tracked.strict:
                size = fake.shape[dim]
                concrete = size.node.maybe_as_int() if isinstance(size, torch.SymInt) else size
                if concrete is not None and concrete not in (0, 1):
                    raise ConstraintViolation(
                        f"{tracked.name}.size()[{dim}] was marked dynamic (mark_dynamic) but the code "
                        f"specialised it to {concrete}; use maybe_mark_dynamic to allow that"
                    )
        builder = _GuardBuilder(symbol_to_source, env.backed_var_to_val)
        for key, expr in input_equalities:
            builder.add(sympy.Eq(builder.symbol_for_key(key), expr, evaluate=False))
        issued = set()
        for guard in env.guards:
            size_oblivious = getattr(guard, "size_oblivious", False)
            if env._maybe_evaluate_static(guard.expr, axioms=(), size_oblivious=size_oblivious) is not None:
                continue
            expr = env.simplify(guard.expr)
            if expr in issued:
                continue
            issued.add(expr)
            builder.add(expr)
        for symbol in list(symbol_to_source):
            if isinstance(symbol, tuple):
                continue
            bounds = env.var_to_range.get(symbol)
            if bounds is None:
                continue
            if bounds.lower not in (-sympy.oo, -int_oo):
                builder.add(sympy.Le(bounds.lower, symbol, evaluate=False))
            if bounds.upper not in (sympy.oo, int_oo):
                builder.add(sympy.Le(symbol, bounds.upper, evaluate=False))
        return {"bindings": builder.bindings, "guards": builder.guards}


def _track(symbol_to_source, input_equalities, key, value, always):
    """Notes where an input's size/stride/int comes from: the first source of each symbol
    defines it; any other source must equal its expression. Constants are the tensor
    guard's business, except where that guard leaves the dimension unchecked (`always`)."""
    if isinstance(value, torch.SymInt):
        concrete = value.node.maybe_as_int()
        if concrete is None:
            expr = value.node.expr
            if isinstance(expr, sympy.Symbol) and expr not in symbol_to_source:
                symbol_to_source[expr] = [key]
                return
            if isinstance(expr, sympy.Symbol):
                symbol_to_source[expr].append(key)
            input_equalities.append((key, expr))
            return
        value = concrete
    if always:
        input_equalities.append((key, sympy.Integer(value)))


def symbol_name(value):
    """The symbol's name if `value` is a SymInt that is exactly one symbol, else None."""
    if not isinstance(value, torch.SymInt):
        return None
    expr = value.node.expr
    return expr.name if isinstance(expr, sympy.Symbol) else None


def is_constant(value):
    """The Python number a symbolic value stands for when the ShapeEnv knows it, else None."""
    node = value.node
    if isinstance(value, torch.SymInt):
        return node.maybe_as_int()
    if isinstance(value, torch.SymBool):
        return node.maybe_as_bool()
    return node.maybe_as_float()


def _safe_print(printer, expr):
    try:
        return printer.doprint(expr)
    except Exception:  # a symbol with no source: show the sympy form
        return str(expr)


class _GuardBuilder:
    """Turns sympy guards into expression trees over binding slots, with their text."""

    _RELATIONS = {
        sympy.Eq: "eq", sympy.Ne: "ne", sympy.Lt: "lt", sympy.Le: "le", sympy.Gt: "gt", sympy.Ge: "ge",
    }
    _VARIADIC = {sympy.Add: "add", sympy.Mul: "mul", sympy.And: "and", sympy.Or: "or",
                 sym_functions.Max: "max", sym_functions.Min: "min"}
    _BINARY = {sym_functions.FloorDiv: "floordiv", sym_functions.CleanDiv: "floordiv",
               sym_functions.PythonMod: "mod", sym_functions.Mod: "mod", sympy.Mod: "mod"}

    def __init__(self, symbol_to_source, hints):
        self.symbol_to_source = symbol_to_source
        self.hints = hints  # symbol -> the value it had in this trace
        self.bindings = []
        self.guards = []
        self._slots = {}  # (name, kind, dim) -> slot
        self._key_symbols = {}  # (name, kind, dim) -> placeholder sympy symbol for text
        self._text_sources = {}

    def symbol_for_key(self, key):
        """A sympy symbol standing for the value at `key` itself (for input equalities)."""
        symbol = self._key_symbols.get(key)
        if symbol is None:
            symbol = sympy.Symbol(f"__input{len(self._key_symbols)}", integer=True)
            self._key_symbols[key] = symbol
            self.symbol_to_source[symbol] = [key]
        return symbol

    def slot(self, key):
        slot = self._slots.get(key)
        if slot is None:
            slot = len(self._slots)
            self._slots[key] = slot
            self.bindings.append((key[0], key[1], key[2], slot))
        return slot

    def _key_of(self, symbol):
        keys = self.symbol_to_source.get(symbol)
        if not keys:
            raise _Unbound(symbol)
        return keys[0]

    def add(self, expr):
        try:
            tree = self._tree(expr)
        except _Unbound as unbound:
            raise RuntimeError(f"shape guard {expr} reads {unbound.args[0]}, which no input defines") from None
        except _Untranslatable:
            tree = self._python_fallback(expr)
        self.guards.append((tree, self._text(expr)))

    def _text(self, expr):
        names = {symbol: [_key_text(keys[0])] for symbol, keys in self.symbol_to_source.items()}
        printer = ShapeGuardPythonPrinter(names, lambda text: text, names)
        return _safe_print(printer, expr)

    def _tree(self, expr):
        if expr is sympy.true:
            return ("int", 1)
        if expr is sympy.false:
            return ("int", 0)
        if isinstance(expr, sympy.Symbol):
            return ("sym", self.slot(self._key_of(expr)))
        if isinstance(expr, sympy.Integer):
            return ("int", int(expr))
        if isinstance(expr, sympy.Not):
            return ("not", self._tree(expr.args[0]))
        for kind, name in self._RELATIONS.items():
            if isinstance(expr, kind):
                return (name, self._tree(expr.lhs), self._tree(expr.rhs))
        for kind, name in self._VARIADIC.items():
            if isinstance(expr, kind):
                return (name, *(self._tree(arg) for arg in expr.args))
        for kind, name in self._BINARY.items():
            if isinstance(expr, kind):
                return (name, self._tree(expr.args[0]), self._tree(expr.args[1]))
        if isinstance(expr, sym_functions.ModularIndexing):
            base, divisor, modulus = (self._tree(arg) for arg in expr.args)
            return ("mod", ("floordiv", base, divisor), modulus)
        if isinstance(expr, (sympy.Pow, sym_functions.PowByNatural)):
            base, exponent = expr.args
            if isinstance(exponent, sympy.Integer) and exponent >= 0:
                return ("pow", self._tree(base), ("int", int(exponent)))
        if isinstance(expr, sympy.Abs):
            return ("abs", self._tree(expr.args[0]))
        raise _Untranslatable(expr)

    def _python_fallback(self, expr):
        """A guard the C++ evaluator cannot read: evaluated by Python over the slots."""
        symbols = sorted(expr.free_symbols, key=str)
        slots = tuple(self.slot(self._key_of(symbol)) for symbol in symbols)
        printer = _SlotPrinter({symbol: f"v[{i}]" for i, symbol in enumerate(symbols)})
        code = printer.doprint(expr)
        namespace = {"math": math, "torch": torch, "operator": operator}
        function = eval(f"lambda v: bool({code})", namespace)  # noqa: S307 (text we printed)
        # It must hold for the values this trace saw; a guard that cannot even be evaluated
        # would fail every call, so it is an error now rather than a recompile loop later.
        example = tuple(int(self.hints[symbol]) for symbol in symbols if symbol in self.hints)
        if len(example) == len(symbols) and not function(example):
            raise RuntimeError(f"shape guard {expr} ({code}) does not hold for the traced sizes")
        return ("python", function, slots)


class _Unbound(Exception):
    pass


class _Untranslatable(Exception):
    pass


class _SlotPrinter(PythonPrinter):
    def __init__(self, names):
        super().__init__()
        self._names = names

    def _print_Symbol(self, expr):
        return self._names[expr]


def _key_text(key):
    name, kind, dim = key
    if kind == "size":
        return f"{name}.size()[{dim}]"
    if kind == "stride":
        return f"{name}.stride()[{dim}]"
    if kind == "offset":
        return f"{name}.storage_offset()"
    return name


def describe(value):
    """(the Python number `value` stands for or None, the symbol's name or None) for a
    symbolic number: what the tracer needs to fold it or to find its graph input."""
    constant = is_constant(value)
    return constant, (None if constant is not None else symbol_name(value))


# Graph operations on symbolic numbers that Python would otherwise answer with a guard.
SYM_INT = torch.sym_int
SYM_FLOAT = torch.sym_float
SYM_MAX = torch.sym_max
SYM_MIN = torch.sym_min
