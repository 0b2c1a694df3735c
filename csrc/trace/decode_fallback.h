// Decoding for the tracer until the bytecode stage's decoder is merged: builds the
// InstructionList contract from `dis.get_instructions` (same fields, jump targets resolved).
#pragma once

#include <Python.h>

#include "bytecode/instruction.h"

namespace bytegraph::trace {

bytecode::InstructionList decode_code(PyObject* code);
// The opcode's name, for messages (dis.opname).
std::string opcode_name(int opcode);
// The opcode number of `name` in this interpreter (opcode.opmap), or -1.
int opcode_number(const char* name);

}  // namespace bytegraph::trace
