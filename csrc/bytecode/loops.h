// Which instructions are inside a loop of the normal control flow.
#pragma once

#include <cstddef>

#include "bytecode/instruction.h"

namespace bytegraph::bytecode {

// Whether instructions[index] lies between the target and the source of a backward jump
// reachable from the entry without an exception edge. Backward jumps of exception-handler
// code (3.12's `with` cleanups jump back to the code after the block) are not loops.
bool inside_loop(const InstructionList& instructions, std::size_t index);

}  // namespace bytegraph::bytecode
