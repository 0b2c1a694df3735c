// A deep copy of an instruction list: new instructions whose jump targets and exception-table
// entries point into the copy. Generated code that embeds a code's own bytecode takes a copy,
// so the one decoded list a compile shares is never moved from or edited.
#pragma once

#include "bytecode/instruction.h"

namespace bytegraph::bytecode {

InstructionList clone(const InstructionList& instructions);

}  // namespace bytegraph::bytecode
