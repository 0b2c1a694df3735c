// The maximum stack depth of an instruction list, as CPython's assembler computes
// co_stacksize: a worklist over reachable instructions from depth 0 at the first one,
// following fall-through and jumps (each with its own stack effect) and, for instructions
// covered by an exception-table entry, the handler at depth `depth + lasti + 1` (the entry's
// depth, the pushed lasti, the exception). Arguments must be final (they feed the effects).
// ValueError on a stack underflow or inconsistent depths (naming the instruction), on an
// opcode without a known stack effect, or on references to instructions not in the list.
#pragma once

#include <vector>

#include "bytecode/instruction.h"
#include "bytecode/instruction_index.h"

namespace bytegraph::bytecode {

int compute_stack_depth(const InstructionList& instructions, const InstructionIndex& index);
int compute_stack_depth(const InstructionList& instructions);
// The stack depth before each instruction (-1 where unreachable), by the same walk.
std::vector<int> instruction_depths(const InstructionList& instructions);

}  // namespace bytegraph::bytecode
