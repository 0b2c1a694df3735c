// What the exception handlers protecting an instruction do, read from the handlers' code.
//
// An exception raised at an instruction may run code of the program before it leaves the
// frame: an except clause or a finally block. The other handlers the compiler makes only
// call a with block's __exit__ and re-raise, or tidy up the stack, the locals and the handled
// exception before re-raising; an exception passes through them to the next handler out.
#pragma once

#include <cstddef>
#include <unordered_map>

#include "bytecode/instruction.h"

namespace bytegraph::bytecode {

// Whether an exception raised at `instruction` reaches an except clause or a finally block of
// its frame. `index`: each instruction's position in `instructions`.
bool handled_in_frame(const InstructionList& instructions,
                      const std::unordered_map<const Instruction*, std::size_t>& index, const Instruction& instruction);

}  // namespace bytegraph::bytecode
