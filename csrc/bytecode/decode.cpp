#include "bytecode/decode.h"

#include <string>
#include <string_view>

#include "bytecode/arguments.h"
#include "bytecode/exception_table.h"
#include "bytecode/location_table.h"
#include "bytecode/opcodes.h"
#include "python/errors.h"

namespace bytegraph::bytecode {

namespace {

[[noreturn]] void throw_malformed(const std::string& message) {
  throw PythonError::make(PyExc_ValueError, message);
}

std::string_view bytes_view(PyObject* bytes /* borrowed */) {
  return {PyBytes_AS_STRING(bytes), static_cast<std::size_t>(PyBytes_GET_SIZE(bytes))};
}

// Where each instruction sits in the code units, while decoding.
struct UnitMap {
  std::vector<int> instruction_at;  // code unit -> instruction index, -1 inside caches
  std::vector<int> first_unit;      // instruction index -> its first unit (first prefix)
  std::vector<int> jump_unit;       // instruction index -> jump target unit, or -1

  // The instruction starting exactly at `unit`, or -1.
  int starting_at(int unit) const {
    if (unit < 0 || unit >= static_cast<int>(instruction_at.size())) return -1;
    int index = instruction_at[unit];
    return index >= 0 && first_unit[index] == unit ? index : -1;
  }
};

// Splits the code units into instructions (prefixes folded, caches skipped).
InstructionList split_instructions(std::string_view code, UnitMap& map) {
  const int units = static_cast<int>(code.size() / 2);
  const auto* bytes = reinterpret_cast<const unsigned char*>(code.data());
  map.instruction_at.assign(units, -1);
  InstructionList instructions;
  unsigned extended = 0;
  int first_unit = -1;
  for (int unit = 0; unit < units; ++unit) {
    int opcode = bytes[2 * unit];
    unsigned byte_arg = bytes[2 * unit + 1];
    if (first_unit < 0) first_unit = unit;
    if (!is_instruction_opcode(opcode)) {
      throw_malformed("unknown opcode " + std::to_string(opcode) + (opcode == op::CACHE ? " (CACHE)" : "") +
                      " where an instruction starts, at offset " + std::to_string(2 * unit));
    }
    if (opcode == op::EXTENDED_ARG) {
      extended = (extended | byte_arg) << 8;
      continue;
    }
    const OpcodeInfo& info = opcode_info(opcode);
    int index = static_cast<int>(instructions.size());
    auto instruction = std::make_unique<Instruction>();
    instruction->opcode = opcode;
    instruction->arg = info.has_arg ? static_cast<int>(extended | byte_arg) : -1;
    instruction->offset = 2 * unit;
    instruction->decoded_prefixes = unit - first_unit;
    int end = unit + 1 + info.cache_entries;
    if (end > units) throw_malformed(std::string(info.name) + " at offset " + std::to_string(2 * unit) + " is cut off");
    for (int u = first_unit; u <= unit; ++u) map.instruction_at[u] = index;
    map.first_unit.push_back(first_unit);
    map.jump_unit.push_back(!info.is_jump              ? -1
                            : info.is_backward_jump ? end - instruction->arg
                                                    : end + instruction->arg);
    instructions.push_back(std::move(instruction));
    extended = 0;
    first_unit = -1;
    unit = end - 1;
  }
  if (first_unit >= 0) throw_malformed("code ends with a dangling EXTENDED_ARG");
  return instructions;
}

void link_jumps(InstructionList& instructions, const UnitMap& map) {
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    if (!opcode_info(instructions[i]->opcode).is_jump) continue;
    int target = map.starting_at(map.jump_unit[i]);
    if (target < 0) {
      throw_malformed(std::string(opcode_info(instructions[i]->opcode).name) + " at offset " +
                      std::to_string(instructions[i]->offset) + " jumps to offset " +
                      std::to_string(2 * map.jump_unit[i]) + ", which does not start an instruction");
    }
    instructions[i]->target = instructions[target].get();
    instructions[target]->is_jump_target = true;
  }
}

std::vector<std::shared_ptr<ExceptionTableEntry>> attach_exception_table(InstructionList& instructions,
                                                                         const UnitMap& map,
                                                                         std::string_view table) {
  std::vector<std::shared_ptr<ExceptionTableEntry>> entries;
  for (const RawExceptionEntry& raw : parse_exception_table(table)) {
    int first = map.starting_at(raw.start);
    int after = raw.end == static_cast<int>(map.instruction_at.size()) ? static_cast<int>(instructions.size())
                                                                       : map.starting_at(raw.end);
    int handler = map.starting_at(raw.target);
    if (first < 0 || after <= first || handler < 0) {
      throw_malformed("exception table entry [" + std::to_string(2 * raw.start) + ", " + std::to_string(2 * raw.end) +
                      ") -> " + std::to_string(2 * raw.target) + " does not match instruction boundaries");
    }
    auto entry = std::make_shared<ExceptionTableEntry>();
    entry->start = instructions[first].get();
    entry->end = instructions[after - 1].get();
    entry->target = instructions[handler].get();
    entry->depth = raw.depth;
    entry->lasti = raw.lasti;
    for (int i = first; i < after; ++i) instructions[i]->exception_entry = entry;
    entries.push_back(std::move(entry));
  }
  return entries;
}

void attach_positions(InstructionList& instructions, const UnitMap& map, PyCodeObject* code) {
  std::vector<Positions> per_unit = positions_per_unit(bytes_view(code->co_linetable), code->co_firstlineno,
                                                       static_cast<int>(map.instruction_at.size()));
  std::optional<int> last_line;
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    Instruction& instruction = *instructions[i];
    instruction.positions = per_unit[map.first_unit[i]];
    int line = instruction.positions.lineno;
    if (line >= 0 && line != last_line) {
      instruction.starts_line = line;
      last_line = line;
    }
  }
}

void resolve_argvals(InstructionList& instructions, PyCodeObject* code) {
  ArgumentTables tables{code->co_consts, code->co_names, code->co_localsplusnames};
  for (auto& instruction : instructions) {
    if (instruction->arg >= 0) instruction->argval = resolve_argval(tables, instruction->opcode, instruction->arg);
  }
}

}  // namespace

DecodedCode decode(PyCodeObject* code) {
  if (code == nullptr || !PyCode_Check(reinterpret_cast<PyObject*>(code))) {
    throw PythonError::make(PyExc_TypeError, "decode() expects a code object");
  }
  py::Ref<> co_code = check(PyCode_GetCode(code));
  UnitMap map;
  DecodedCode decoded;
  decoded.instructions = split_instructions(bytes_view(co_code.get()), map);
  link_jumps(decoded.instructions, map);
  decoded.exception_table = attach_exception_table(decoded.instructions, map, bytes_view(code->co_exceptiontable));
  attach_positions(decoded.instructions, map, code);
  resolve_argvals(decoded.instructions, code);
  return decoded;
}

bool load_global_pushes_null(const Instruction& instruction) {
  return instruction.opcode == op::LOAD_GLOBAL && instruction.arg > 0 && (instruction.arg & 1);
}

}  // namespace bytegraph::bytecode
