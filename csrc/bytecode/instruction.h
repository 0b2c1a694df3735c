// One decoded bytecode instruction: the unit every later stage works on.
//
// Contract (decode.h produces it, assemble.h consumes it, the tracer and codegen read it):
// - CACHE entries are not instructions; EXTENDED_ARG is folded into `arg`.
// - Jumps point at their target instruction (`target`), never at offsets. Instructions live
//   in a `std::vector<std::unique_ptr<Instruction>>` so these pointers stay valid while the
//   list is edited.
// - `argval` is the resolved argument as a Python object (name, constant, local name,
//   KW_NAMES tuple, ...), or null where the opcode has none.
// - `offset` is the offset in the code the instruction was decoded from (-1 for new ones).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "python/ref.h"

namespace bytegraph::bytecode {

struct Instruction;

// Source positions as CPython's location table stores them; -1 where absent.
struct Positions {
  int lineno = -1;
  int end_lineno = -1;
  int col_offset = -1;
  int end_col_offset = -1;
};

// An exception-table entry covering [start, end] (both inclusive, as instructions).
struct ExceptionTableEntry {
  Instruction* start = nullptr;
  Instruction* end = nullptr;
  Instruction* target = nullptr;
  int depth = 0;
  bool lasti = false;
};

struct Instruction {
  int opcode = 0;
  int arg = -1;        // -1: the opcode takes no argument
  int offset = -1;     // in the original code object, in bytes
  py::Ref<> argval;    // resolved argument, or null
  Instruction* target = nullptr;                         // jumps only
  std::shared_ptr<ExceptionTableEntry> exception_entry;  // innermost covering entry, or null
  Positions positions;
  std::optional<int> starts_line;  // set on the first instruction of a source line
  bool is_jump_target = false;
  // EXTENDED_ARG prefixes the instruction had where it was decoded from. A jump keeps that
  // many when they still fit: a backward jump 255 units back is also consistent with one
  // prefix (256 then), and 3.13's assembler can settle on that larger fixed point.
  int decoded_prefixes = 0;
};

using InstructionList = std::vector<std::unique_ptr<Instruction>>;

}  // namespace bytegraph::bytecode
