#include "bytecode/liveness.h"

#include <algorithm>
#include <string_view>
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

// How an instruction touches a local slot, in execution order: MAKE_CELL and the loads
// read it (a cell made from an argument keeps its value), stores and deletes of fast locals
// write it (a store into a cell keeps the cell), and 3.13's paired instructions touch two
// (STORE_FAST_LOAD_FAST stores, then loads).
struct Access {
  PyObject* name;  // borrowed from the instruction's argval
  bool reads;
};

std::vector<Access> local_accesses(const Instruction& inst) {
  const OpcodeInfo& info = opcode_info(inst.opcode);
  if (!(info.has_local || info.has_free) || !inst.argval) return {};
  std::string_view name = info.name;
  bool store_first = name.rfind("STORE_", 0) == 0 || name.rfind("DELETE_", 0) == 0;
  bool reads = !store_first;  // LOAD_*, MAKE_CELL
  if (store_first && !info.has_local) return {};
  PyObject* argval = inst.argval.get();
  if (info.packed_locals && PyTuple_Check(argval) && PyTuple_GET_SIZE(argval) == 2) {
    // The second half reads unless the name says it stores too (STORE_FAST_STORE_FAST).
    bool second_reads = name.find("_LOAD_") != std::string_view::npos || name.rfind("LOAD_", 0) == 0;
    return {{PyTuple_GET_ITEM(argval, 0), reads}, {PyTuple_GET_ITEM(argval, 1), second_reads}};
  }
  if (!PyUnicode_Check(argval)) return {};
  return {{argval, reads}};
}

}  // namespace

std::vector<std::string> live_locals_at(const InstructionList& instructions, std::size_t index) {
  const std::size_t n = instructions.size();
  if (index >= n) return {};
  InstructionIndex positions(instructions);
  LocalNumbers numbers;
  // Each instruction's accesses as (local number, reads), in execution order.
  std::vector<std::vector<std::pair<int, bool>>> accesses(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const Access& access : local_accesses(*instructions[i]))
      accesses[i].emplace_back(numbers.of(access.name), access.reads);
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
      // Backwards through the instruction's own accesses: a write kills, a read makes live.
      for (auto it = accesses[k].rbegin(); it != accesses[k].rend(); ++it) out[it->first] = it->second;
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
