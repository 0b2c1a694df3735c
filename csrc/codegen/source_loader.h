// Emits the instructions that push a source's current value, inside generated code that
// has run the original prefix (so cells are made and free variables copied).
#pragma once

#include <Python.h>

#include "codegen/code_builder.h"
#include "guards/source.h"

namespace bytegraph::codegen {

void emit_load_source(CodeBuilder& builder, const guards::Source& source, PyCodeObject* code /* borrowed */);

}  // namespace bytegraph::codegen
