// The prefix every generated code object keeps from the code it replaces: MAKE_CELL,
// COPY_FREE_VARS and RESUME. The frame hook runs before them, so generated code must run
// them itself (cells made from raw argument values, free variables copied from the closure).
#pragma once

#include <Python.h>

#include "bytecode/instruction.h"
#include "codegen/code_builder.h"

namespace bytegraph::codegen {

void copy_prefix(CodeBuilder& builder, PyCodeObject* original /* borrowed */);
// Positions on the function's first line, for generated instructions.
bytecode::Positions first_line_positions(PyCodeObject* original /* borrowed */);

}  // namespace bytegraph::codegen
