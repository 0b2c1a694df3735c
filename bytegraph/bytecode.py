"""CPython bytecode as editable Python objects, backed by the C++ codec (`bytegraph._C.bytecode`).

    instructions = decode(fn.__code__)           # list[Instruction], CACHE hidden, EXTENDED_ARG folded
    instructions.insert(0, Instruction.create("NOP"))
    code = assemble(instructions, like=fn.__code__, co_name="g")
    print(dis(code))

Jumps point at their target `Instruction` (`target`), exception-table entries at their
start/end/handler instructions, so a list can be edited freely: `assemble` recomputes
offsets, relative jump arguments (flipping FORWARD/BACKWARD where needed), EXTENDED_ARG
prefixes, the exception and location tables and the stack size. Arguments are recomputed
from `argval` for constants (matched by identity), names and variables.

Exception-table ranges are rebuilt from each instruction's `exn_tab_entry`: an instruction
inserted inside a protected range should share its neighbours' entry, or it splits the range.
New instructions without `positions` get "no location" entries in the line table.
"""

from __future__ import annotations

import dis as _dis
import opcode as _opcode
import types

from bytegraph._extension import _C

__all__ = ["Instruction", "ExceptionTableEntry", "decode", "assemble", "dis", "stack_depth"]


_NOT_GIVEN = object()


class ExceptionTableEntry:
    """Instructions `start`..`end` (inclusive) are protected by the handler `target`; on an
    exception the stack is unwound to `depth` (then lasti is pushed if `lasti`)."""

    __slots__ = ("start", "end", "target", "depth", "lasti")

    def __init__(self, start, end, target, depth, lasti):
        self.start, self.end, self.target, self.depth, self.lasti = start, end, target, depth, lasti

    def __repr__(self):
        def where(inst):
            return f"{inst.opname}@{inst.offset}"
        return (f"ExceptionTableEntry({where(self.start)}..{where(self.end)} -> {where(self.target)}, "
                f"depth={self.depth}, lasti={self.lasti})")


class Instruction:
    """One instruction. Equality is identity: jumps and table entries refer to instructions."""

    __slots__ = ("opcode", "arg", "argval", "argrepr", "offset", "starts_line", "is_jump_target",
                 "positions", "target", "exn_tab_entry")

    def __init__(self, opcode, arg=None, argval=None, argrepr="", offset=None, starts_line=None,
                 is_jump_target=False, positions=None, target=None, exn_tab_entry=None):
        self.opcode = opcode
        self.arg = arg
        self.argval = argval
        self.argrepr = argrepr
        self.offset = offset
        self.starts_line = starts_line
        self.is_jump_target = is_jump_target
        self.positions = _dis.Positions(*positions) if positions is not None else _dis.Positions()
        self.target = target
        self.exn_tab_entry = exn_tab_entry

    @classmethod
    def create(cls, opname, arg=None, argval=_NOT_GIVEN, *, target=None, push_null=False, positions=None):
        """A new instruction; give `argval` (resolved at assembly) or a raw `arg`, or `target`
        for a jump. `push_null` sets LOAD_GLOBAL's NULL bit."""
        opcode = _opcode.opmap[opname]
        has_argval = argval is not _NOT_GIVEN
        if not has_argval:
            argval = None
        if opcode < _opcode.HAVE_ARGUMENT:
            if arg is not None or has_argval:
                raise ValueError(f"{opname} takes no argument")
        elif target is not None and opcode not in _opcode.hasjrel:
            raise ValueError(f"{opname} is not a jump")
        if push_null:
            if opname != "LOAD_GLOBAL":
                raise ValueError("push_null is only meaningful for LOAD_GLOBAL")
            arg = (arg or 0) | 1
        if _resolves_from_argval(opcode) and not has_argval:
            # The argument is an index into a table of the code object being built: only
            # the value says what is meant.
            raise ValueError(f"{opname} needs an argval (its arg is computed at assembly)")
        if arg is None and opcode >= _opcode.HAVE_ARGUMENT and not has_argval and target is None:
            raise ValueError(f"{opname} needs an arg, an argval or a target")
        if arg is None and opcode >= _opcode.HAVE_ARGUMENT and not _resolves_from_argval(opcode) \
                and target is None:
            arg, argval = argval, argval
        return cls(opcode, arg, argval, target=target, positions=positions)

    @property
    def opname(self):
        return _opcode.opname[self.opcode]

    @property
    def pushes_null(self):
        """LOAD_GLOBAL's NULL bit (3.11 call protocol)."""
        return self.opname == "LOAD_GLOBAL" and self.arg is not None and bool(self.arg & 1)

    def __repr__(self):
        arg = "" if self.arg is None else f" {self.arg}"
        shown = f" ({self.argrepr})" if self.argrepr else ""
        return f"<Instruction {self.opname}{arg}{shown} at {self.offset}>"


def _resolves_from_argval(opcode):
    return (opcode in _opcode.hasconst or opcode in _opcode.hasname or opcode in _opcode.haslocal
            or opcode in _opcode.hasfree or opcode in _opcode.hascompare)


def decode(code: types.CodeType) -> list[Instruction]:
    """The instructions of `code` (reads `co_code`, never the adaptive bytecode)."""
    return _C.bytecode.decode(code)


def assemble(instructions, like: types.CodeType, **fields) -> types.CodeType:
    """A new code object from `instructions`; co_* fields not computed come from `like` unless
    given, e.g. assemble(insts, like=code, co_name="g", co_consts=(None, 1))."""
    return _C.bytecode.assemble(list(instructions), like, fields)


def stack_depth(instructions) -> int:
    """The maximum stack depth of `instructions` (what co_stacksize would be)."""
    return _C.bytecode.stack_depth(list(instructions))


def dis(code_or_instructions, current: Instruction | None = None) -> str:
    """A dis-style listing of a code object or an instruction list; `current` is marked -->."""
    if isinstance(code_or_instructions, types.CodeType):
        code_or_instructions = decode(code_or_instructions)
    return _C.bytecode.dis(list(code_or_instructions), current)
