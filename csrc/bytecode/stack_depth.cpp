#include "bytecode/stack_depth.h"

#include <algorithm>
#include <string>
#include <vector>

#include "bytecode/opcodes.h"
#include "python/errors.h"

namespace bytegraph::bytecode {

namespace {

std::string describe(const InstructionList& instructions, int i) {
  const Instruction& instruction = *instructions[i];
  std::string text = std::string(opcode_info(instruction.opcode).name) + " (instruction " + std::to_string(i);
  if (instruction.offset >= 0) text += ", offset " + std::to_string(instruction.offset);
  return text + ")";
}

class DepthWalker {
 public:
  DepthWalker(const InstructionList& instructions, const InstructionIndex& index)
      : instructions_(instructions), index_(index), depth_(instructions.size(), -1) {}

  const std::vector<int>& depths() const { return depth_; }

  int run() {
    if (instructions_.empty()) return 0;
    if (reach(0, 0, -1)) pending_.push_back(0);
    seed_all_handlers();
    drain();
    return max_depth_;
  }

 private:
  void drain() {
    while (!pending_.empty()) {
      int i = pending_.back();
      pending_.pop_back();
      walk_block_from(i);
    }
  }

  // Every handler's entry depth is fixed by its table entry, so handlers are walked even when
  // the code they protect is no longer reachable: CPython sizes the stack before it removes
  // such dead code, and its handlers still count towards co_stacksize.
  void seed_all_handlers() {
    for (const auto& instruction : instructions_) {
      if (!instruction->exception_entry) continue;
      const ExceptionTableEntry& entry = *instruction->exception_entry;
      int handler = index_.of(entry.target, "an exception handler");
      if (reach(handler, entry.depth + (entry.lasti ? 1 : 0) + 1, -1)) pending_.push_back(handler);
    }
  }

  // Follows straight-line code from `i` until a terminal instruction or known ground.
  void walk_block_from(int i) {
    const int n = static_cast<int>(instructions_.size());
    while (i < n) {
      const Instruction& instruction = *instructions_[i];
      const OpcodeInfo& info = opcode_info(instruction.opcode);
      int depth = depth_[i];
      if (instruction.exception_entry) {
        const ExceptionTableEntry& entry = *instruction.exception_entry;
        int handler = index_.of(entry.target, "an exception handler");
        if (reach(handler, entry.depth + (entry.lasti ? 1 : 0) + 1, i)) pending_.push_back(handler);
      }
      if (info.is_jump) {
        int target = index_.of(instruction.target, "a jump target");
        if (reach(target, depth + effect(i, true), i)) pending_.push_back(target);
      }
      if (info.is_terminal) return;
      int next_depth = depth + effect(i, false);
      if (i + 1 >= n) {
        throw PythonError::make(PyExc_ValueError, "execution falls off the end after " + describe(instructions_, i));
      }
      if (!reach(i + 1, next_depth, i)) return;
      ++i;
    }
  }

  int effect(int i, bool jump) const {
    const Instruction& instruction = *instructions_[i];
    const OpcodeInfo& info = opcode_info(instruction.opcode);
    if (info.has_arg && instruction.arg < 0 && !stack_effect_ignores_arg(instruction.opcode)) {
      throw PythonError::make(PyExc_ValueError, describe(instructions_, i) + " has no argument to compute its stack effect");
    }
    std::optional<int> value = stack_effect(instruction.opcode, std::max(instruction.arg, 0), jump);
    if (!value) throw PythonError::make(PyExc_ValueError, describe(instructions_, i) + " has no known stack effect");
    // dis gives RETURN_GENERATOR 0 (before 3.13) because CPython sizes the stack before it inserts the
    // generator prefix; when the generator resumes, the sent value is on the stack (the
    // prefix's POP_TOP drops it), so the prefix needs one slot like any other push.
    if (instruction.opcode == op::RETURN_GENERATOR) return std::max(*value, 1);
    return *value;
  }

  // Records that `i` is reached with `depth` (from instruction `from`); true if it is new.
  bool reach(int i, int depth, int from) {
    if (depth < 0) {
      throw PythonError::make(PyExc_ValueError, "stack underflow: " + describe(instructions_, from) +
                                                    " leaves the stack at depth " + std::to_string(depth));
    }
    max_depth_ = std::max(max_depth_, depth);
    if (depth_[i] >= 0) {
      if (depth_[i] != depth) {
        throw PythonError::make(PyExc_ValueError, "inconsistent stack depth at " + describe(instructions_, i) + ": " +
                                                      std::to_string(depth_[i]) + " and " + std::to_string(depth));
      }
      return false;
    }
    depth_[i] = depth;
    return true;
  }

  const InstructionList& instructions_;
  const InstructionIndex& index_;
  std::vector<int> depth_;
  std::vector<int> pending_;
  int max_depth_ = 0;
};

}  // namespace

int compute_stack_depth(const InstructionList& instructions, const InstructionIndex& index) {
  return DepthWalker(instructions, index).run();
}

int compute_stack_depth(const InstructionList& instructions) {
  return compute_stack_depth(instructions, InstructionIndex(instructions));
}

std::vector<int> instruction_depths(const InstructionList& instructions) {
  InstructionIndex index(instructions);
  DepthWalker walker(instructions, index);
  walker.run();
  return walker.depths();
}

}  // namespace bytegraph::bytecode
