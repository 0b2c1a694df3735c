// Decoding a code object into the Instruction list every later stage works on.
//
// Reads `co_code` (the de-quickened bytes, never the adaptive ones), hides CACHE units,
// folds EXTENDED_ARG prefixes into the argument, turns relative jumps into `target`
// pointers, attaches exception-table entries, resolves `argval`, and keeps each
// instruction's source positions and line starts. `offset` is the byte offset of the
// opcode itself (as `dis` and `f_lasti` count), not of its first EXTENDED_ARG prefix.
// `is_jump_target` marks jump targets only (as dis.get_instructions does), not handlers.
// Malformed code raises ValueError (as PythonError): unknown opcodes, jumps that land
// outside the code or inside an instruction, tables that do not fit the code.
#pragma once

#include <Python.h>

#include <memory>
#include <vector>

#include "bytecode/instruction.h"

namespace bytegraph::bytecode {

struct DecodedCode {
  InstructionList instructions;
  // In table order; each instruction's `exception_entry` points into these.
  std::vector<std::shared_ptr<ExceptionTableEntry>> exception_table;
};

DecodedCode decode(PyCodeObject* code /* borrowed */);

// LOAD_GLOBAL's low argument bit: push the call protocol's NULL with the global.
bool load_global_pushes_null(const Instruction& instruction);

}  // namespace bytegraph::bytecode
