// Placing instructions at offsets: relative jump arguments depend on offsets, and offsets on
// the EXTENDED_ARG prefixes the arguments need. Prefix counts only grow from their minimum,
// so the loop reaches the same fixed point as CPython's assembler (which starts every jump
// with no prefix) and always terminates.
#pragma once

#include <vector>

#include "bytecode/instruction.h"
#include "bytecode/instruction_index.h"

namespace bytegraph::bytecode {

struct Layout {
  std::vector<int> start;     // per instruction: its first code unit (first prefix)
  std::vector<int> prefixes;  // per instruction: EXTENDED_ARG prefixes
  int total_units = 0;

  int units(const InstructionList& instructions, std::size_t i) const;
};

// Sets each jump's `arg` (and flips JUMP_FORWARD/JUMP_BACKWARD-style opcodes whose direction
// no longer matches) and returns where every instruction lands. Non-jump arguments must
// already be final. ValueError for a jump whose target is missing or not in the list, or
// that would need a direction its opcode has no variant for.
Layout lay_out(InstructionList& instructions, const InstructionIndex& index);

}  // namespace bytegraph::bytecode
