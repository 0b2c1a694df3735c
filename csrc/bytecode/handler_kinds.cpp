#include "bytecode/handler_kinds.h"

#include "bytecode/opcodes.h"

namespace bytegraph::bytecode {

namespace {

enum class HandlerKind { kPassesOn, kRunsProgramCode };

// Instructions of a compiler-made cleanup: they move the exception and restore locals (an
// inlined comprehension's variable, an `except ... as name` binding), and run nothing.
bool is_bookkeeping(int opcode) {
  switch (opcode) {
    case op::NOP:
    case op::PUSH_EXC_INFO:
    case op::POP_EXCEPT:
    case op::COPY:
    case op::SWAP:
    case op::POP_TOP:
    case op::LOAD_CONST:
    case op::STORE_FAST:
    case op::DELETE_FAST:
      return true;
    default:
      return false;
  }
}

HandlerKind kind_of(const InstructionList& instructions, std::size_t start) {
  for (std::size_t i = start; i < instructions.size(); ++i) {
    const int opcode = instructions[i]->opcode;
    if (opcode == op::WITH_EXCEPT_START || opcode == op::RERAISE) return HandlerKind::kPassesOn;
    if (!is_bookkeeping(opcode)) return HandlerKind::kRunsProgramCode;
  }
  return HandlerKind::kPassesOn;
}

}  // namespace

bool handled_in_frame(const InstructionList& instructions,
                      const std::unordered_map<const Instruction*, std::size_t>& index, const Instruction& instruction) {
  // Handlers nest: the code of one is protected by the next one out. The walk is bounded by
  // the number of instructions, which a well-formed table never needs.
  const ExceptionTableEntry* entry = instruction.exception_entry.get();
  for (std::size_t steps = 0; entry != nullptr && steps <= instructions.size(); ++steps) {
    auto found = index.find(entry->target);
    if (found == index.end()) return true;  // unknown: assume the program handles it
    if (kind_of(instructions, found->second) == HandlerKind::kRunsProgramCode) return true;
    entry = entry->target->exception_entry.get();
  }
  return false;
}

}  // namespace bytegraph::bytecode
