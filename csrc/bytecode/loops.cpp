#include "bytecode/loops.h"

#include <vector>

#include "bytecode/instruction_index.h"
#include "bytecode/opcodes.h"

namespace bytegraph::bytecode {

namespace {

// Instructions reachable from the first one by falling through and jumping only.
std::vector<bool> reachable_without_exceptions(const InstructionList& instructions, const InstructionIndex& index) {
  std::vector<bool> seen(instructions.size(), false);
  std::vector<std::size_t> work;
  if (!instructions.empty()) work.push_back(0);
  while (!work.empty()) {
    std::size_t i = work.back();
    work.pop_back();
    if (i >= instructions.size() || seen[i]) continue;
    seen[i] = true;
    const Instruction& inst = *instructions[i];
    const OpcodeInfo& info = opcode_info(inst.opcode);
    if (!info.is_terminal) work.push_back(i + 1);
    if (info.is_jump && inst.target != nullptr) {
      int target = index.find(inst.target);
      if (target >= 0) work.push_back(static_cast<std::size_t>(target));
    }
  }
  return seen;
}

}  // namespace

bool inside_loop(const InstructionList& instructions, std::size_t index) {
  InstructionIndex positions(instructions);
  std::vector<bool> reachable = reachable_without_exceptions(instructions, positions);
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& inst = *instructions[i];
    if (!reachable[i] || !opcode_info(inst.opcode).is_backward_jump || inst.target == nullptr) continue;
    int target = positions.find(inst.target);
    if (target >= 0 && static_cast<std::size_t>(target) <= index && index <= i) return true;
  }
  return false;
}

}  // namespace bytegraph::bytecode
