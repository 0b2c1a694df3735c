"""Writes bytegraph's opcode tables (a C++ header) from the running interpreter.

Usage: python tools/gen_opcodes.py OUT.h

Everything comes from this interpreter's `opcode` and `dis` modules: names, inline cache
counts, argument and jump kinds, and stack effects. Stack effects that depend on the argument
are fitted to a small closed form (constant, linear, a table on the low argument bits, a
two-field linear form for packed arguments, or a small table followed by a linear tail); the
fitted form is checked against `dis.stack_effect` on many arguments and the build fails when
it does not reproduce it.

What the `opcode` module does not say (which opcodes end a block, which jumps are
unconditional, which opcode is the other direction of a relative jump) is derived from the
opcode *names*, and every name used that way must exist, so a renamed opcode stops the build
instead of silently losing its property.
"""

import dis
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


def _probe(op, arg, jump):
    try:
        if op >= opcode.HAVE_ARGUMENT:
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
    if op < opcode.HAVE_ARGUMENT:
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
        rows.append({
            "op": op,
            "name": name if known else "",
            "known": known,
            "caches": _cache_entries(op) if known else 0,
            "has_arg": op >= opcode.HAVE_ARGUMENT,
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
    w("// Opcode numbers by name (only the opcodes this interpreter defines).")
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
    w("struct OpcodeInfo {")
    w("  const char* name;  // empty for opcodes this interpreter does not define")
    w("  bool known;")
    w("  std::uint8_t cache_entries;  // inline CACHE code units after the instruction")
    w("  bool has_arg;")
    w("  bool is_jump, is_relative_jump, is_backward_jump, is_conditional_jump;")
    w("  bool is_terminal;  // no fall-through: unconditional jump or scope exit")
    w("  bool has_const, has_name, has_local, has_free, has_compare;")
    w("  std::int16_t flipped;  // the same jump in the other direction, or -1")
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
          + f", {row['flipped']},")
        w(f"              {_effect_initializer(row['effect'])},")
        w(f"              {_effect_initializer(row['effect_jump'])}}},")
    w("}};")
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
