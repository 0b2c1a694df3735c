"""Writes bytegraph's opcode tables (a C++ header) from the running interpreter.

Usage: python tools/gen_opcodes.py OUT.h

Everything comes from this interpreter's `opcode` and `dis` modules: names, inline cache
counts, argument and jump kinds, and stack effects. Stack effects that depend on the argument
are fitted to a small closed form (constant, linear, a table on the low argument bits, a
two-field linear form for packed arguments, or a small table followed by a linear tail); the
fitted form is checked against `dis.stack_effect` on many arguments and the build fails when
it does not reproduce it.

How arguments pack a table index with flag bits (LOAD_GLOBAL's push-NULL bit, LOAD_ATTR's
method bit on 3.12+, COMPARE_OP's specialisation mask, the two locals of 3.13's
LOAD_FAST_LOAD_FAST) is measured by running `dis` on one-instruction code objects, and the
call protocol (whether NULL goes before or after the callable) from how `dis` spells
LOAD_GLOBAL's NULL. The full COMPARE_OP argument of each comparison comes from compiling it.

What the `opcode` module does not say (which opcodes end a block, which jumps are
unconditional, which opcode is the other direction of a relative jump, which instructions
mean the same thing across versions: the *families*) is derived from the opcode *names*,
and every name used that way must exist, so a renamed opcode stops the build instead of
silently losing its property. Stage code asks by family or by the derived constants; it
names only opcodes every supported version has.
"""

import dis
import dis as _dis
import opcode
import random
import sys
from pathlib import Path

# Arguments on which every fitted stack-effect form is checked.
_PROBE_ARGS = sorted(
    set(range(0, 1025))
    | {v + d for k in range(10, 25) for v in (1 << k,) for d in (-1, 0, 1)}
    | set(random.Random(0).sample(range(0, 1 << 24), 2000))
)

# Unconditional transfers and scope exits: no fall-through to the next instruction.
_UNCONDITIONAL_JUMP_NAMES = ("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
_SCOPE_EXIT_NAMES = ("RETURN_VALUE", "RAISE_VARARGS", "RERAISE")
_LATER_SCOPE_EXIT_NAMES = ("RETURN_CONST",)  # 3.12+

# Instructions that mean the same thing across versions under different names, or exist on
# some versions only. The enum is the same on every version; a family may be empty.
FAMILIES = {
    "Jump": ("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"),
    "PopJumpIfTrue": ("POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_IF_TRUE"),
    "PopJumpIfFalse": ("POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_IF_FALSE"),
    "PopJumpIfNone": ("POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_IF_NONE"),
    "PopJumpIfNotNone": ("POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE",
                         "POP_JUMP_IF_NOT_NONE"),
    "JumpIfTrueOrPop": ("JUMP_IF_TRUE_OR_POP",),
    "JumpIfFalseOrPop": ("JUMP_IF_FALSE_OR_POP",),
    "CallPrepare": ("PRECALL",),           # a no-op before CALL
    "KwNames": ("KW_NAMES",),              # keyword names for the next CALL, as a constant
    "CallKw": ("CALL_KW",),                # CALL with the keyword-names tuple on the stack
    "MethodLoad": ("LOAD_METHOD",),        # a method load of its own (later: LOAD_ATTR's bit)
    "LoadFastChecked": ("LOAD_FAST_CHECK",),
    "LoadFastAndClear": ("LOAD_FAST_AND_CLEAR",),
    "LoadFastLoadFast": ("LOAD_FAST_LOAD_FAST",),
    "StoreFastStoreFast": ("STORE_FAST_STORE_FAST",),
    "StoreFastLoadFast": ("STORE_FAST_LOAD_FAST",),
    "LoadClosure": ("LOAD_CLOSURE",),
    "LoadClassDeref": ("LOAD_CLASSDEREF",),
    "LoadSuperAttr": ("LOAD_SUPER_ATTR",),
    "ReturnConst": ("RETURN_CONST",),
    "EndFor": ("END_FOR",),
    "BinarySlice": ("BINARY_SLICE",),
    "StoreSlice": ("STORE_SLICE",),
    "CallIntrinsic1": ("CALL_INTRINSIC_1",),
    "CallIntrinsic2": ("CALL_INTRINSIC_2",),
    "ListToTuple": ("LIST_TO_TUPLE",),
    "UnaryPositive": ("UNARY_POSITIVE",),
    "PrintExpr": ("PRINT_EXPR",),
    "ToBool": ("TO_BOOL",),
    "FormatValue": ("FORMAT_VALUE",),      # conversion and spec in one instruction
    "ConvertValue": ("CONVERT_VALUE",),
    "FormatSimple": ("FORMAT_SIMPLE",),
    "FormatWithSpec": ("FORMAT_WITH_SPEC",),
    "SetFunctionAttribute": ("SET_FUNCTION_ATTRIBUTE",),
    "EndSend": ("END_SEND",),              # pops the receiver a finished `yield from` leaves
    "CleanupThrow": ("CLEANUP_THROW",),    # a `yield from`'s yield when an exception is thrown in
}

# Families some supported version must have (guards against a typo emptying a family).
_FAMILIES_NEVER_EMPTY = ("Jump", "PopJumpIfTrue", "PopJumpIfFalse", "PopJumpIfNone", "PopJumpIfNotNone")


def _has_arg(op):
    if hasattr(opcode, "hasarg"):  # 3.12+
        return op in opcode.hasarg
    return op >= opcode.HAVE_ARGUMENT


def _real_opcode(name):
    """The opcode number of `name`, or None where it is absent or a pseudo-instruction."""
    op = opcode.opmap.get(name)
    return op if op is not None and op < 256 else None


def _probe(op, arg, jump):
    try:
        if _has_arg(op):
            return dis.stack_effect(op, arg, jump=jump)
        return dis.stack_effect(op, jump=jump)
    except ValueError:
        return None


def _fits(form, op, jump):
    return all(_evaluate(form, arg) == _probe(op, arg, jump) for arg in _PROBE_ARGS)


def _evaluate(form, arg):
    kind = form[0]
    if kind == "constant":
        return form[1]
    if kind == "linear":
        return form[1] + form[2] * arg
    if kind == "low_bits":
        _, mask, table = form
        return table[arg & mask]
    if kind == "packed":  # a + b * (arg & 0xFF) + c * (arg >> 8)
        _, a, b, c = form
        return a + b * (arg & 0xFF) + c * (arg >> 8)
    if kind == "table_then_linear":
        _, table, a, b = form
        return table[arg] if arg < len(table) else a + b * arg
    raise AssertionError(kind)


def _candidate_forms(op, jump):
    at = lambda arg: _probe(op, arg, jump)  # noqa: E731
    yield ("constant", at(0))
    yield ("linear", at(0), at(1) - at(0))
    for bits in range(1, 5):
        mask = (1 << bits) - 1
        yield ("low_bits", mask, [at(i) for i in range(mask + 1)])
    yield ("packed", at(0), at(1) - at(0), at(256) - at(0))
    for size in (4, 8, 16):
        b = at(size + 1) - at(size)
        yield ("table_then_linear", [at(i) for i in range(size)], at(size) - b * size, b)


def _representable(form):
    """Whether the C++ struct can hold `form` (int8 tables of at most 16 entries)."""
    tables = [form[2]] if form[0] == "low_bits" else [form[1]] if form[0] == "table_then_linear" else []
    return all(len(t) <= 16 and all(-128 <= v < 128 for v in t) for t in tables)


def fit_stack_effect(op, jump):
    """The simplest form reproducing dis.stack_effect(op, arg, jump) everywhere probed."""
    if not _has_arg(op):
        value = _probe(op, None, jump)
        return None if value is None else ("constant", value)
    if _probe(op, 0, jump) is None:
        return None
    for form in _candidate_forms(op, jump):
        if _representable(form) and _fits(form, op, jump):
            return form
    raise SystemExit(f"gen_opcodes: no form reproduces dis.stack_effect for {opcode.opname[op]} "
                     f"(jump={jump}); extend _candidate_forms")


def _cache_entries(op):
    entries = opcode._inline_cache_entries  # a list on 3.11/3.12
    return entries.get(opcode.opname[op], 0) if isinstance(entries, dict) else entries[op]


def _require_names(names):
    missing = [name for name in names if name not in opcode.opmap]
    if missing:
        raise SystemExit(f"gen_opcodes: opcodes {missing} no longer exist: review the derived tables")
    return {opcode.opmap[name] for name in names}


def _one_instruction_code(op, arg):
    """A code object holding `op arg` (plus its caches), with 256 names, locals and consts."""
    raw = bytes([op, arg]) + bytes(2 * _cache_entries(op)) + bytes([opcode.opmap["NOP"], 0])
    return (lambda: None).__code__.replace(
        co_code=raw, co_names=tuple(f"n{i}" for i in range(256)),
        co_varnames=tuple(f"v{i}" for i in range(256)), co_nlocals=256,
        co_consts=tuple(range(256)), co_linetable=b"", co_exceptiontable=b"")


def _dis_instruction(op, arg):
    try:
        return next(iter(_dis.get_instructions(_one_instruction_code(op, arg))))
    except (IndexError, ValueError):
        return None


def _dis_argval(op, arg):
    inst = _dis_instruction(op, arg)
    return None if inst is None else inst.argval


def argrepr_affixes(rows):
    """(opcode, flag bits, prefix, suffix): how dis writes the flag bits of a packed argument
    around the name or comparison (`NULL + x`, `x + NULL|self`, `bool(<)`)."""
    affixes = []
    for row in rows:
        if not row["known"] or row["arg_shift"] == 0:
            continue
        op, shift = row["op"], row["arg_shift"]
        for flags in range(1 << shift):
            base = _dis_instruction(op, (1 << shift))
            inst = _dis_instruction(op, (1 << shift) | flags)
            if base is None or inst is None or inst.argrepr == base.argrepr:
                continue
            plain = str(base.argval)
            at = inst.argrepr.find(plain)
            if at < 0:
                raise SystemExit(f"gen_opcodes: cannot place {opcode.opname[op]}'s flags in {inst.argrepr!r}")
            affixes.append((op, flags, inst.argrepr[:at], inst.argrepr[at + len(plain):]))
    return affixes


def _argument_packing(op):
    """(shift, packed_locals): the table index is arg >> shift, the low bits are flags; or
    the argument holds two local indices (arg >> 4, arg & 15)."""
    if not _has_arg(op) or not (op in opcode.hasname or op in opcode.hascompare or op in opcode.haslocal):
        return 0, False
    if op in opcode.haslocal:
        value = _dis_argval(op, 0x12)
        if isinstance(value, tuple):
            if value != ("v1", "v2"):
                raise SystemExit(f"gen_opcodes: unexpected local packing for {opcode.opname[op]}: {value}")
            return 0, True
        return 0, False
    index_of = (lambda v: int(v[1:])) if op in opcode.hasname else opcode.cmp_op.index
    for shift in range(0, 8):
        ok = True
        for arg in range(0, 256):
            value = _dis_argval(op, arg)
            expected = arg >> shift
            limit = 256 if op in opcode.hasname else len(opcode.cmp_op)
            if expected >= limit:
                continue
            if value is None or index_of(value) != expected:
                ok = False
                break
        if ok:
            return shift, False
    raise SystemExit(f"gen_opcodes: cannot tell how {opcode.opname[op]} packs its argument")


def _null_after_callable():
    """Whether a call's NULL goes after the callable (3.13+) or before it: dis spells
    LOAD_GLOBAL's push-NULL bit 'x + NULL' or 'NULL + x'."""
    code = compile("f()", "<probe>", "eval")
    for inst in _dis.get_instructions(code):
        if inst.opname == "LOAD_GLOBAL" and "NULL" in inst.argrepr:
            return inst.argrepr.endswith("NULL")
        if inst.opname == "PUSH_NULL":
            continue
    # Where LOAD_GLOBAL does not carry the NULL (a PUSH_NULL of its own), look at its place.
    names = [inst.opname for inst in _dis.get_instructions(code)]
    return names.index("PUSH_NULL") > names.index("LOAD_NAME")


def _location_entries_span_instructions():
    """Whether the compiler writes one line-table entry for consecutive instructions with
    equal positions (3.12+) or one entry per instruction (3.11): measured on this file's
    own code objects."""
    module = compile(Path(__file__).read_text(), __file__, "exec")
    stack = [module]
    while stack:
        code = stack.pop()
        stack.extend(c for c in code.co_consts if hasattr(c, "co_linetable"))
        starts, previous = set(), None
        for inst in _dis.get_instructions(code):  # an EXTENDED_ARG prefix starts its instruction
            if previous != "EXTENDED_ARG":
                starts.add(inst.offset // 2)
            previous = inst.opname
        table, at, unit = code.co_linetable, 0, 0
        while at < len(table):
            length = (table[at] & 7) + 1
            if any(u in starts for u in range(unit + 1, unit + length)):
                return True
            unit += length
            at += 1
            while at < len(table) and not table[at] & 0x80:
                at += 1
    return False


def _compare_args():
    """COMPARE_OP's full argument for each comparison, as the compiler writes it."""
    args = []
    for symbol in opcode.cmp_op:
        code = compile(f"a {symbol} b", "<probe>", "eval")
        found = [i.arg for i in _dis.get_instructions(code) if i.opname == "COMPARE_OP"]
        if len(found) != 1:
            raise SystemExit(f"gen_opcodes: no COMPARE_OP for {symbol!r}")
        args.append(found[0])
    return args


def family_rows():
    present = set()
    for names in FAMILIES.values():
        present |= {n for n in names if _real_opcode(n) is not None}
    for family in _FAMILIES_NEVER_EMPTY:
        if not any(_real_opcode(n) is not None for n in FAMILIES[family]):
            raise SystemExit(f"gen_opcodes: family {family} has no opcode here: review FAMILIES")
    return present


def _family_of(name):
    for index, (family, names) in enumerate(FAMILIES.items()):
        if name in names:
            return index + 1
    return 0


def _pair_halves(name):
    """A paired local instruction's two single-local instructions, from its name
    (STORE_FAST_LOAD_FAST: STORE_FAST then LOAD_FAST); (-1, -1) for the others."""
    at = name.find("_FAST_")
    if at < 0 or not name.endswith("_FAST"):
        raise SystemExit(f"gen_opcodes: cannot split the paired instruction {name}")
    halves = (name[:at + len("_FAST")], name[at + len("_FAST_"):])
    return tuple(sorted(_require_names(halves[:1])) + sorted(_require_names(halves[1:])))


def _flipped(name):
    for a, b in (("FORWARD", "BACKWARD"), ("BACKWARD", "FORWARD")):
        if a in name:
            other = name.replace(a, b)
            if other in opcode.opmap:
                return opcode.opmap[other]
    return -1


def _effect_initializer(form):
    if form is None:
        return "{StackEffectKind::kInvalid, 0, 0, 0, 0, {}}"
    kind = form[0]
    if kind == "constant":
        return f"{{StackEffectKind::kConstant, {form[1]}, 0, 0, 0, {{}}}}"
    if kind == "linear":
        return f"{{StackEffectKind::kLinear, {form[1]}, {form[2]}, 0, 0, {{}}}}"
    if kind == "low_bits":
        table = ", ".join(map(str, form[2]))
        return f"{{StackEffectKind::kLowBits, 0, 0, 0, {form[1]}, {{{table}}}}}"
    if kind == "packed":
        return f"{{StackEffectKind::kPacked, {form[1]}, {form[2]}, {form[3]}, 0, {{}}}}"
    table = ", ".join(map(str, form[1]))
    return (f"{{StackEffectKind::kTableThenLinear, {form[2]}, {form[3]}, 0, {len(form[1])}, "
            f"{{{table}}}}}")


def opcode_rows():
    unconditional = _require_names(_UNCONDITIONAL_JUMP_NAMES)
    scope_exits = _require_names(_SCOPE_EXIT_NAMES)
    scope_exits |= {opcode.opmap[name] for name in _LATER_SCOPE_EXIT_NAMES if name in opcode.opmap}
    rows = []
    for op in range(256):
        name = opcode.opname[op]
        known = not name.startswith("<")
        is_jump = op in opcode.hasjrel or op in opcode.hasjabs
        shift, packed = _argument_packing(op) if known else (0, False)
        rows.append({
            "op": op,
            "name": name if known else "",
            "known": known,
            "caches": _cache_entries(op) if known else 0,
            "has_arg": _has_arg(op),
            "is_jump": is_jump,
            "is_relative_jump": op in opcode.hasjrel,
            "is_backward_jump": is_jump and "BACKWARD" in name,
            "is_conditional_jump": is_jump and op not in unconditional,
            "is_terminal": op in unconditional or op in scope_exits,
            "has_const": op in opcode.hasconst,
            "has_name": op in opcode.hasname,
            "has_local": op in opcode.haslocal,
            "has_free": op in opcode.hasfree,
            "has_compare": op in opcode.hascompare,
            "flipped": _flipped(name) if op in opcode.hasjrel else -1,
            "arg_shift": shift,
            "packed_locals": packed,
            "halves": _pair_halves(name) if packed else (-1, -1),
            "family": _family_of(name) if known else 0,
            "effect": fit_stack_effect(op, False) if known else None,
            "effect_jump": fit_stack_effect(op, True) if known else None,
        })
    return rows


def _cpp_bool(value):
    return "true" if value else "false"


def render(rows):
    out = []
    w = out.append
    w("// @generated by tools/gen_opcodes.py from the interpreter's `opcode` and `dis` modules")
    w(f"// (Python {sys.version.split()[0]}). Do not edit: re-run the build instead.")
    w("#pragma once")
    w("")
    w("#include <array>")
    w("#include <cstdint>")
    w("")
    w(f"#define BYTEGRAPH_OPCODES_PY_VERSION_HEX 0x{sys.hexversion:08X}")
    w("")
    w("namespace bytegraph::bytecode {")
    w("")
    w(f"inline constexpr int kHaveArgument = {opcode.HAVE_ARGUMENT};")
    w("")
    w("// Opcode numbers by name (only the opcodes this interpreter defines). Stage code names")
    w("// only opcodes every supported version has; the others it reaches through `Family`.")
    w("namespace op {")
    for row in rows:
        if row["known"]:
            w(f"inline constexpr int {row['name']} = {row['op']};")
    w("}  // namespace op")
    w("")
    w("// How a stack effect depends on the argument; evaluate with stack_effect() (opcodes.h).")
    w("enum class StackEffectKind : std::uint8_t {")
    w("  kInvalid,         // dis.stack_effect rejects the opcode")
    w("  kConstant,        // a")
    w("  kLinear,          // a + b * arg")
    w("  kLowBits,         // table[arg & mask]")
    w("  kPacked,          // a + b * (arg & 0xFF) + c * (arg >> 8)")
    w("  kTableThenLinear, // arg < mask ? table[arg] : a + b * arg")
    w("};")
    w("")
    w("struct StackEffectForm {")
    w("  StackEffectKind kind;")
    w("  int a, b, c, mask;")
    w("  std::array<std::int8_t, 16> table;")
    w("};")
    w("")
    w("// Instructions that mean the same across versions (tools/gen_opcodes.py FAMILIES); a")
    w("// family may have no opcode on this interpreter.")
    w("enum class Family : std::uint8_t {")
    w("  kNone,")
    for family in FAMILIES:
        w(f"  k{family},")
    w("};")
    w(f"inline constexpr int kFamilyCount = {len(FAMILIES) + 1};")
    w("")
    w("struct OpcodeInfo {")
    w("  const char* name;  // empty for opcodes this interpreter does not define")
    w("  bool known;")
    w("  std::uint8_t cache_entries;  // inline CACHE code units after the instruction")
    w("  bool has_arg;")
    w("  bool is_jump, is_relative_jump, is_backward_jump, is_conditional_jump;")
    w("  bool is_terminal;  // no fall-through: unconditional jump or scope exit")
    w("  bool has_const, has_name, has_local, has_free, has_compare;")
    w("  std::int16_t flipped;  // the same jump in the other direction, or -1")
    w("  std::uint8_t arg_shift;  // names and comparisons: the table index is arg >> arg_shift")
    w("  bool packed_locals;      // two local indices: arg >> 4 and arg & 15")
    w("  std::int16_t first_half, second_half;  // packed_locals: the same as two single-local instructions")
    w("  Family family;")
    w("  StackEffectForm effect;       // when execution falls through")
    w("  StackEffectForm effect_jump;  // when the jump is taken (== effect for non-jumps)")
    w("};")
    w("")
    w("inline constexpr std::array<OpcodeInfo, 256> kOpcodeInfo = {{")
    for row in rows:
        w(f"    /* {row['op']:3d} */ {{\"{row['name']}\", {_cpp_bool(row['known'])}, {row['caches']}, "
          + ", ".join(_cpp_bool(row[k]) for k in (
              "has_arg", "is_jump", "is_relative_jump", "is_backward_jump", "is_conditional_jump",
              "is_terminal", "has_const", "has_name", "has_local", "has_free", "has_compare"))
          + f", {row['flipped']}, {row['arg_shift']}, {_cpp_bool(row['packed_locals'])}, "
          + f"{row['halves'][0]}, {row['halves'][1]}, "
          + f"Family::k{list(FAMILIES)[row['family'] - 1] if row['family'] else 'None'},")
        w(f"              {_effect_initializer(row['effect'])},")
        w(f"              {_effect_initializer(row['effect_jump'])}}},")
    w("}};")
    w("")
    w("// The call protocol: where a call's NULL goes relative to the callable ([NULL, f, args]")
    w("// before 3.13, [f, NULL, args] since), as dis spells LOAD_GLOBAL's NULL.")
    w(f"inline constexpr bool kCallNullAfterCallable = {_cpp_bool(_null_after_callable())};")
    cell = _real_opcode("LOAD_CLOSURE")
    w("// The instruction that pushes a cell object itself (for a closure tuple).")
    w(f"inline constexpr int kLoadCellOpcode = {cell if cell is not None else opcode.opmap['LOAD_FAST']};")
    w("")
    w("// Whether one line-table entry covers consecutive instructions with equal positions")
    w("// (3.12+), or each instruction gets entries of its own (3.11).")
    w(f"inline constexpr bool kLocationEntriesSpanInstructions = {_cpp_bool(_location_entries_span_instructions())};")
    w("")
    w("// COMPARE_OP's full argument for each comparison (index and specialisation bits), as the")
    w("// compiler writes it for `a OP b`.")
    cargs = ", ".join(map(str, _compare_args()))
    w(f"inline constexpr std::array<int, {len(opcode.cmp_op)}> kCompareOpArgs = {{{cargs}}};")
    w("")
    w("// How dis writes an argument's flag bits around its name or comparison.")
    w("struct ArgreprAffix {")
    w("  int opcode, flags;")
    w("  const char* prefix;")
    w("  const char* suffix;")
    w("};")
    affixes = argrepr_affixes(rows)
    w(f"inline constexpr std::array<ArgreprAffix, {len(affixes)}> kArgreprAffixes = {{{{")
    for op, flags, prefix, suffix in affixes:
        w(f"    {{{op}, {flags}, \"{prefix}\", \"{suffix}\"}},")
    w("}};")
    w("")
    w("// Names for the arguments of CALL_INTRINSIC_1/2 (dis._intrinsic_*_descs; empty before 3.12).")
    for n in (1, 2):
        names = list(getattr(_dis, f"_intrinsic_{n}_descs", []))
        joined = ", ".join(f'"{name}"' for name in names)
        w(f"inline constexpr std::array<const char*, {len(names)}> kIntrinsic{n}Names = {{{joined}}};")
    w("")
    w("// Names for the arguments of COMPARE_OP and BINARY_OP (opcode.cmp_op, opcode._nb_ops).")
    cmp = ", ".join(f'"{c}"' for c in opcode.cmp_op)
    w(f"inline constexpr std::array<const char*, {len(opcode.cmp_op)}> kCompareOpNames = {{{cmp}}};")
    nb_ops = ", ".join(f'"{sym}"' for _, sym in opcode._nb_ops)
    w(f"inline constexpr std::array<const char*, {len(opcode._nb_ops)}> kBinaryOpNames = {{{nb_ops}}};")
    w("")
    w("}  // namespace bytegraph::bytecode")
    w("")
    return "\n".join(out)


def main(argv):
    if len(argv) != 2:
        raise SystemExit("usage: gen_opcodes.py OUT.h")
    path = Path(argv[1])
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render(opcode_rows())
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


if __name__ == "__main__":
    main(sys.argv)
