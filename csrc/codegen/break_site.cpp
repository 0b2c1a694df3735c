#include "codegen/break_site.h"

#include <optional>

#include "bytecode/arguments.h"
#include "bytecode/opcodes.h"

namespace bytegraph::codegen {

namespace op = bytecode::op;

namespace {

using bytecode::Family;

bool is_branch(int opcode) {
  Family family = bytecode::opcode_info(opcode).family;
  return bytecode::is_pop_jump_if(opcode) || family == Family::kJumpIfTrueOrPop || family == Family::kJumpIfFalseOrPop;
}

// How many values a non-jumping instruction leaves on top of what it did not consume; empty
// for instructions generated code does not run on its own (they may push NULL, move values
// around, or belong to exception handling and generators).
std::optional<int> values_pushed(const bytecode::Instruction& inst) {
  switch (bytecode::opcode_info(inst.opcode).family) {
    case Family::kPrintExpr:
    case Family::kStoreSlice:
      return 0;
    case Family::kLoadClassDeref:
    case Family::kFormatValue:
    case Family::kFormatSimple:
    case Family::kFormatWithSpec:
    case Family::kConvertValue:
    case Family::kListToTuple:
    case Family::kUnaryPositive:
    case Family::kBinarySlice:
    case Family::kToBool:
    case Family::kCallIntrinsic1:
    case Family::kCallIntrinsic2:
      return 1;
    default:
      break;
  }
  switch (inst.opcode) {
    case op::STORE_ATTR:
    case op::STORE_GLOBAL:
    case op::STORE_SUBSCR:
    case op::STORE_NAME:
    case op::STORE_DEREF:
    case op::DELETE_DEREF:
    case op::DELETE_ATTR:
    case op::DELETE_GLOBAL:
    case op::DELETE_SUBSCR:
    case op::DELETE_NAME:
    case op::POP_TOP:
    case op::LIST_APPEND:
    case op::LIST_EXTEND:
    case op::SET_ADD:
    case op::SET_UPDATE:
    case op::MAP_ADD:
    case op::DICT_UPDATE:
    case op::DICT_MERGE:
      return 0;
    case op::BINARY_OP:
    case op::BINARY_SUBSCR:
    case op::COMPARE_OP:
    case op::IS_OP:
    case op::CONTAINS_OP:
    case op::UNARY_NEGATIVE:
    case op::UNARY_NOT:
    case op::UNARY_INVERT:
    case op::GET_ITER:
    case op::GET_LEN:
    case op::LOAD_NAME:
    case op::LOAD_DEREF:
    case op::IMPORT_NAME:
    case op::IMPORT_FROM:
    case op::BUILD_STRING:
    case op::BUILD_TUPLE:
    case op::BUILD_LIST:
    case op::BUILD_SET:
    case op::BUILD_MAP:
    case op::BUILD_CONST_KEY_MAP:
    case op::BUILD_SLICE:
    case op::CALL_FUNCTION_EX:
    case op::COPY:
      return 1;
    case op::LOAD_ATTR:
    case op::LOAD_GLOBAL:
      // The flag bit asks for a NULL (LOAD_GLOBAL) or a method pair (LOAD_ATTR, 3.12+) too.
      if (bytecode::argument_flags(inst.opcode, inst.arg) != 0) return std::nullopt;
      return 1;
    case op::BEFORE_WITH:
      return 2;
    case op::UNPACK_SEQUENCE:
      return inst.arg;
    default:
      return std::nullopt;
  }
}

int effect(const bytecode::Instruction& inst, bool jump) {
  return bytecode::stack_effect(inst.opcode, std::max(inst.arg, 0), jump).value_or(0);
}

}  // namespace

BreakSite find_break_site(const bytecode::InstructionList& instructions, int offset, bool in_grad_mode_block) {
  BreakSite site;
  std::size_t index = 0;
  while (index < instructions.size() && instructions[index]->offset != offset) ++index;
  if (index == instructions.size()) {
    site.not_splittable = "no instruction at offset " + std::to_string(offset);
    return site;
  }
  site.index = index;
  const bytecode::Instruction& inst = *instructions[index];
  const char* name = bytecode::opcode_info(inst.opcode).name;
  if (inst.exception_entry && !in_grad_mode_block) {
    site.not_splittable = std::string(name) + " at offset " + std::to_string(offset) +
                          " is inside a try block or a with statement";
    return site;
  }
  const int next_offset = index + 1 < instructions.size() ? instructions[index + 1]->offset : -1;
  const Family family = bytecode::opcode_info(inst.opcode).family;
  if (inst.opcode == op::CALL || family == Family::kCallKw) {
    // The callable and its NULL-or-self, the arguments, and CALL_KW's keyword names.
    site.kind = BreakSite::Kind::Call;
    site.continuations.push_back({next_offset, inst.arg + 2 + (family == Family::kCallKw ? 1 : 0), 1});
  } else if (is_branch(inst.opcode)) {
    site.kind = BreakSite::Kind::Branch;
    site.continuations.push_back({next_offset, -effect(inst, false), 0});
    site.continuations.push_back({inst.target ? inst.target->offset : -1, -effect(inst, true), 0});
  } else if (inst.opcode == op::RETURN_VALUE || inst.opcode == op::RAISE_VARARGS || family == Family::kReturnConst) {
    site.kind = BreakSite::Kind::Terminal;
  } else if (std::optional<int> pushed = values_pushed(inst)) {
    site.kind = BreakSite::Kind::Simple;
    site.continuations.push_back({next_offset, *pushed - effect(inst, false), *pushed});
  } else {
    site.not_splittable = std::string("generated code does not run ") + name + " on its own";
    return site;
  }
  for (const Continuation& next : site.continuations) {
    if (next.offset < 0) site.not_splittable = std::string(name) + " has no instruction to resume at";
  }
  return site;
}

}  // namespace bytegraph::codegen
