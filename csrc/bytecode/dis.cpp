#include "bytecode/dis.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bytecode/arguments.h"
#include "bytecode/instruction_index.h"
#include "bytecode/layout.h"
#include "bytecode/opcodes.h"

namespace bytegraph::bytecode {

namespace {

constexpr int kOpnameWidth = 20;
constexpr int kOpargWidth = 5;

std::string pad_left(const std::string& text, int width) {
  return std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(text.size()))), ' ') + text;
}

std::string pad_right(const std::string& text, int width) {
  return text + std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(text.size()))), ' ');
}

void rstrip(std::string& text) {
  while (!text.empty() && text.back() == ' ') text.pop_back();
}

// Where the instructions would land: lays out a skeleton copy (opcode, arg, target) so the
// caller's list is not modified.
Layout display_layout(const InstructionList& instructions) {
  InstructionList skeleton;
  skeleton.reserve(instructions.size());
  std::unordered_map<const Instruction*, Instruction*> copies;
  for (const auto& instruction : instructions) {
    auto copy = std::make_unique<Instruction>();
    copy->opcode = instruction->opcode;
    copy->arg = instruction->arg;
    copies.emplace(instruction.get(), copy.get());
    skeleton.push_back(std::move(copy));
  }
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    auto it = copies.find(instructions[i]->target);
    skeleton[i]->target = it == copies.end() ? nullptr : it->second;
  }
  return lay_out(skeleton, InstructionIndex(skeleton));
}

}  // namespace

std::string format_instructions(const InstructionList& instructions, const Instruction* current) {
  InstructionIndex index(instructions);
  Layout layout = display_layout(instructions);
  auto opcode_offset = [&](std::size_t i) { return 2 * (layout.start[i] + layout.prefixes[i]); };

  std::unordered_set<const Instruction*> labels;
  int max_line = 0;
  for (const auto& instruction : instructions) {
    if (instruction->target) labels.insert(instruction->target);
    if (instruction->exception_entry) labels.insert(instruction->exception_entry->target);
    if (instruction->starts_line) max_line = std::max(max_line, *instruction->starts_line);
  }
  int line_width = max_line >= 1000 ? static_cast<int>(std::to_string(max_line).size()) : 3;
  int max_offset = 2 * layout.total_units - 2;
  int offset_width = max_offset >= 10000 ? static_cast<int>(std::to_string(max_offset).size()) : 4;

  std::string out;
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& instruction = *instructions[i];
    if (instruction.starts_line && i > 0) out += "\n";
    std::string row = instruction.starts_line ? pad_left(std::to_string(*instruction.starts_line), line_width)
                                              : std::string(static_cast<std::size_t>(line_width), ' ');
    row += &instruction == current ? " -->" : "    ";
    row += labels.count(&instruction) ? " >>" : "   ";
    row += " " + pad_left(std::to_string(opcode_offset(i)), offset_width);
    row += " " + pad_right(opcode_info(instruction.opcode).name, kOpnameWidth);
    if (instruction.arg >= 0 || opcode_info(instruction.opcode).has_arg) {
      row += " " + pad_left(instruction.arg >= 0 ? std::to_string(instruction.arg) : "?", kOpargWidth);
      int target_offset = instruction.target ? 2 * layout.start[index.of(instruction.target, "a jump target")] : -1;
      std::string meaning = argument_repr(instruction.opcode, instruction.arg, instruction.argval.get(), target_offset);
      if (!meaning.empty()) row += " (" + meaning + ")";
    }
    rstrip(row);
    out += row + "\n";
  }

  // The exception table, one line per range as dis prints it (end = last code unit covered).
  bool header = false;
  for (std::size_t i = 0; i < instructions.size();) {
    const ExceptionTableEntry* entry = instructions[i]->exception_entry.get();
    std::size_t j = i + 1;
    while (j < instructions.size() && instructions[j]->exception_entry.get() == entry) ++j;
    if (entry) {
      if (!header) out += "ExceptionTable:\n";
      header = true;
      int end_unit = j < instructions.size() ? layout.start[j] : layout.total_units;
      out += "  " + std::to_string(2 * layout.start[i]) + " to " + std::to_string(2 * end_unit - 2) + " -> " +
             std::to_string(2 * layout.start[index.of(entry->target, "an exception handler")]) + " [" +
             std::to_string(entry->depth) + "]" + (entry->lasti ? " lasti" : "") + "\n";
    }
    i = j;
  }
  return out;
}

}  // namespace bytegraph::bytecode
