#include "codegen/prefix.h"

#include "bytecode/decode.h"
#include "bytecode/opcodes.h"

namespace bytegraph::codegen {

namespace op = bytecode::op;

void copy_prefix(CodeBuilder& builder, PyCodeObject* original) {
  bytecode::DecodedCode decoded = bytecode::decode(original);
  for (const auto& instruction : decoded.instructions) {
    const int opcode = instruction->opcode;
    if (opcode != op::MAKE_CELL && opcode != op::COPY_FREE_VARS && opcode != op::RESUME &&
        opcode != op::NOP) {
      break;
    }
    bytecode::Instruction& copy = builder.emit(opcode, instruction->arg, instruction->argval.copy());
    copy.positions = instruction->positions;
    if (opcode == op::RESUME) break;
  }
}

bytecode::Positions first_line_positions(PyCodeObject* original) {
  bytecode::Positions positions;
  positions.lineno = positions.end_lineno = original->co_firstlineno;
  return positions;
}

}  // namespace bytegraph::codegen
