#include "bytecode/clone.h"

#include <unordered_map>

#include "python/errors.h"

namespace bytegraph::bytecode {

InstructionList clone(const InstructionList& instructions) {
  InstructionList copy;
  copy.reserve(instructions.size());
  std::unordered_map<const Instruction*, Instruction*> moved;
  for (const auto& original : instructions) {
    auto instruction = std::make_unique<Instruction>();
    instruction->opcode = original->opcode;
    instruction->arg = original->arg;
    instruction->offset = original->offset;
    instruction->argval = original->argval.copy();
    instruction->positions = original->positions;
    instruction->starts_line = original->starts_line;
    instruction->is_jump_target = original->is_jump_target;
    instruction->decoded_prefixes = original->decoded_prefixes;
    moved.emplace(original.get(), instruction.get());
    copy.push_back(std::move(instruction));
  }
  auto into_copy = [&](const Instruction* instruction) -> Instruction* {
    if (instruction == nullptr) return nullptr;
    auto found = moved.find(instruction);
    if (found == moved.end()) throw InternalError("clone: a jump or handler outside the instruction list");
    return found->second;
  };
  std::unordered_map<const ExceptionTableEntry*, std::shared_ptr<ExceptionTableEntry>> entries;
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& original = *instructions[i];
    copy[i]->target = into_copy(original.target);
    const ExceptionTableEntry* entry = original.exception_entry.get();
    if (entry == nullptr) continue;
    std::shared_ptr<ExceptionTableEntry>& copied = entries[entry];
    if (!copied) {
      copied = std::make_shared<ExceptionTableEntry>(*entry);
      copied->start = into_copy(entry->start);
      copied->end = into_copy(entry->end);
      copied->target = into_copy(entry->target);
    }
    copy[i]->exception_entry = copied;
  }
  return copy;
}

}  // namespace bytegraph::bytecode
