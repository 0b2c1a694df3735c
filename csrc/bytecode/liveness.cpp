#include "bytecode/liveness.h"

#include <algorithm>
#include <unordered_map>

#include "bytecode/instruction_index.h"
#include "bytecode/opcodes.h"

namespace bytegraph::bytecode {

namespace {

// Locals are numbered by name as they are met, so the sets are small bit vectors.
class LocalNumbers {
 public:
  int of(PyObject* name) {
    std::string text = PyUnicode_AsUTF8(name);
    auto [it, added] = numbers_.emplace(text, static_cast<int>(names_.size()));
    if (added) names_.push_back(text);
    return it->second;
  }
  std::size_t size() const { return names_.size(); }
  const std::string& name(std::size_t i) const { return names_[i]; }

 private:
  std::unordered_map<std::string, int> numbers_;
  std::vector<std::string> names_;
};

bool reads_local(int opcode) {
  return opcode == op::LOAD_FAST || opcode == op::LOAD_CLOSURE ||
         opcode == op::LOAD_DEREF || opcode == op::LOAD_CLASSDEREF || opcode == op::MAKE_CELL;
}

bool writes_local(int opcode) { return opcode == op::STORE_FAST || opcode == op::DELETE_FAST; }

}  // namespace

std::vector<std::string> live_locals_at(const InstructionList& instructions, std::size_t index) {
  const std::size_t n = instructions.size();
  if (index >= n) return {};
  InstructionIndex positions(instructions);
  LocalNumbers numbers;
  std::vector<int> use(n, -1), def(n, -1);
  for (std::size_t i = 0; i < n; ++i) {
    const Instruction& inst = *instructions[i];
    if (!inst.argval || !PyUnicode_Check(inst.argval.get())) continue;
    if (reads_local(inst.opcode)) use[i] = numbers.of(inst.argval.get());
    else if (writes_local(inst.opcode)) def[i] = numbers.of(inst.argval.get());
  }
  const std::size_t width = numbers.size();
  std::vector<std::vector<bool>> live_in(n, std::vector<bool>(width, false));
  // Successors of each instruction (fall-through, jump target, exception handler).
  std::vector<std::vector<int>> successors(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Instruction& inst = *instructions[i];
    const OpcodeInfo& info = opcode_info(inst.opcode);
    if (!info.is_terminal && i + 1 < n) successors[i].push_back(static_cast<int>(i + 1));
    if (info.is_jump) {
      int target = positions.find(inst.target);
      if (target >= 0) successors[i].push_back(target);
    }
    if (inst.exception_entry) {
      int handler = positions.find(inst.exception_entry->target);
      if (handler >= 0) successors[i].push_back(handler);
    }
  }
  // Iterate to a fixed point, backwards (few passes for structured code).
  bool changed = true;
  while (changed) {
    changed = false;
    for (std::size_t k = n; k-- > 0;) {
      std::vector<bool> out(width, false);
      for (int s : successors[k])
        for (std::size_t v = 0; v < width; ++v) out[v] = out[v] || live_in[s][v];
      if (def[k] >= 0) out[def[k]] = false;
      if (use[k] >= 0) out[use[k]] = true;
      if (out != live_in[k]) {
        live_in[k] = std::move(out);
        changed = true;
      }
    }
  }
  std::vector<std::string> live;
  for (std::size_t v = 0; v < width; ++v)
    if (live_in[index][v]) live.push_back(numbers.name(v));
  return live;
}

}  // namespace bytegraph::bytecode
