// Which local variables a code object may still read from a given instruction on: the
// backward may-use dataflow over the instruction graph (fall-through, jumps, and the
// exception handler of each protected instruction).
//
// A local is live at instruction i when some path from i reads it (LOAD_FAST,
// LOAD_CLOSURE/LOAD_DEREF of a cell that shares its slot) before writing it (STORE_FAST,
// DELETE_FAST). Generated code uses this to keep only what the rest of a split frame needs.
#pragma once

#include <string>
#include <vector>

#include "bytecode/instruction.h"

namespace bytegraph::bytecode {

// The names of the locals live on entry to instructions[index], in first-use order of the
// name table `localsplus_names` (locals are identified by their argval names).
std::vector<std::string> live_locals_at(const InstructionList& instructions, std::size_t index);

}  // namespace bytegraph::bytecode
