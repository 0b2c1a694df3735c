// A `dis`-style listing of an Instruction list, for logs, errors and the trace viewer.
//
// Columns as in CPython 3.11's dis.dis: line number where a line starts (with a blank line
// before it), `-->` on the `current` instruction, `>>` on jump targets and exception
// handlers, the offset, the opcode name, the argument and its meaning; then the exception
// table. Offsets are where the instructions would land if assembled now, so an edited list
// shows consistent offsets (an unedited decoded list shows its original ones).
#pragma once

#include <string>

#include "bytecode/instruction.h"

namespace bytegraph::bytecode {

std::string format_instructions(const InstructionList& instructions, const Instruction* current = nullptr);

}  // namespace bytegraph::bytecode
