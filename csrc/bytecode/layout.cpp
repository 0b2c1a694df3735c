#include "bytecode/layout.h"

#include <string>

#include "bytecode/opcodes.h"
#include "python/errors.h"

namespace bytegraph::bytecode {

int Layout::units(const InstructionList& instructions, std::size_t i) const {
  return prefixes[i] + 1 + opcode_info(instructions[i]->opcode).cache_entries;
}

namespace {

void place(const InstructionList& instructions, Layout& layout) {
  int unit = 0;
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    layout.start[i] = unit;
    unit += layout.units(instructions, i);
  }
  layout.total_units = unit;
}

// Points `instruction` at `target_unit` from `end_unit`; returns the argument it needs.
int aim_jump(Instruction& instruction, int end_unit, int target_unit) {
  bool backward = target_unit < end_unit;
  const OpcodeInfo& info = opcode_info(instruction.opcode);
  if (info.is_backward_jump != backward) {
    if (info.flipped < 0) {
      throw PythonError::make(PyExc_ValueError, std::string(info.name) + " cannot jump " +
                                                    (backward ? "backward" : "forward") + " (target offset " +
                                                    std::to_string(2 * target_unit) + ")");
    }
    instruction.opcode = info.flipped;
  }
  return backward ? end_unit - target_unit : target_unit - end_unit;
}

}  // namespace

Layout lay_out(InstructionList& instructions, const InstructionIndex& index) {
  const std::size_t n = instructions.size();
  Layout layout;
  layout.start.assign(n, 0);
  layout.prefixes.assign(n, 0);
  std::vector<int> targets(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    Instruction& instruction = *instructions[i];
    if (opcode_info(instruction.opcode).is_jump) {
      layout.prefixes[i] = instruction.decoded_prefixes;
      targets[i] = index.find(instruction.target);
      if (targets[i] < 0) {
        throw PythonError::make(PyExc_ValueError, std::string("the target of ") + opcode_info(instruction.opcode).name +
                                                      " (instruction " + std::to_string(i) +
                                                      ") is not an instruction of this list");
      }
    } else {
      layout.prefixes[i] = extended_arg_count(instruction.arg);
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    place(instructions, layout);
    for (std::size_t i = 0; i < n; ++i) {
      if (targets[i] < 0) continue;
      Instruction& instruction = *instructions[i];
      int end = layout.start[i] + layout.units(instructions, i);
      const int caches = opcode_info(instruction.opcode).cache_entries;
      instruction.arg = aim_jump(instruction, end, layout.start[targets[i]]);
      // A flipped jump may have another size (3.13's JUMP_BACKWARD has a cache entry and
      // JUMP_FORWARD none): place everything again.
      if (opcode_info(instruction.opcode).cache_entries != caches) grew = true;
      int needed = extended_arg_count(instruction.arg);
      if (needed > layout.prefixes[i]) {
        layout.prefixes[i] = needed;
        grew = true;
      }
    }
  }
  return layout;
}

}  // namespace bytegraph::bytecode
