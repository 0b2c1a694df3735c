// Position of each instruction in its list, for passes that follow `target` pointers.
#pragma once

#include <string>
#include <unordered_map>

#include "bytecode/instruction.h"
#include "python/errors.h"

namespace bytegraph::bytecode {

class InstructionIndex {
 public:
  explicit InstructionIndex(const InstructionList& instructions) {
    index_.reserve(instructions.size());
    for (std::size_t i = 0; i < instructions.size(); ++i) index_.emplace(instructions[i].get(), static_cast<int>(i));
  }

  // The index of `instruction`, or -1 when it is not in the list (or null).
  int find(const Instruction* instruction) const {
    auto it = instruction ? index_.find(instruction) : index_.end();
    return it == index_.end() ? -1 : it->second;
  }

  // The index of `instruction`; ValueError (naming `what`) when it is not in the list.
  int of(const Instruction* instruction, const char* what) const {
    int index = find(instruction);
    if (index < 0) throw PythonError::make(PyExc_ValueError, std::string(what) + " is not an instruction of this list");
    return index;
  }

 private:
  std::unordered_map<const Instruction*, int> index_;
};

}  // namespace bytegraph::bytecode
