// Assembling an Instruction list into a new code object (CPython 3.11).
//
// Arguments are recomputed from argvals (code_tables.h), jumps are aimed and EXTENDED_ARG
// prefixes grown to a fixed point (layout.h), CACHE units are written zeroed, and the
// exception table, location table and stack size are rebuilt. Every field not computed
// comes from `like` unless overridden. Exception-table ranges come from each instruction's
// `exception_entry` (consecutive instructions with the same handler, depth and lasti form
// one range), not from the entries' start/end fields.
//
// `instructions` is updated in place: final `arg`s, and jump opcodes flipped where their
// direction changed. A decoded, unedited list re-assembles to identical co_code,
// co_exceptiontable, co_linetable and co_stacksize.
#pragma once

#include <Python.h>

#include <optional>

#include "bytecode/instruction.h"
#include "python/ref.h"

namespace bytegraph::bytecode {

// Code-object fields to take from somewhere other than `like` (null/empty: keep like's).
struct CodeOverrides {
  std::optional<int> argcount, posonlyargcount, kwonlyargcount, flags, firstlineno, stacksize;
  py::Ref<> consts, names, varnames, cellvars, freevars, filename, name, qualname;
};

py::Ref<> assemble(InstructionList& instructions, PyCodeObject* like /* borrowed */,
                   const CodeOverrides& overrides = {});

}  // namespace bytegraph::bytecode
