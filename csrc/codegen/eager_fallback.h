// A graph op can fail only when it runs: an index out of range or a singular matrix is
// invisible to fake tensors. Generated code then runs the code it replaces from its start, in
// the same frame. Nothing it did before the graph call is visible to that code (the call only
// reads its inputs; graphs that write in place or draw random numbers are not given a
// fallback), so the frame runs as if it had not been compiled: the op raises again at its own
// line, where a try block around it catches it, after the side effects that come before it.
#pragma once

#include <Python.h>

#include <cstddef>

#include "bytecode/instruction.h"
#include "codegen/code_builder.h"
#include "python/ref.h"

namespace bytegraph::codegen {

struct EagerFallback {
  // Called with the graph's exception: returns to run the original code, or raises.
  py::Ref<> on_failure;
  const bytecode::InstructionList* original = nullptr;  // the replaced code, decoded (not edited)

  bool enabled() const { return on_failure && original != nullptr; }
};

// Protects builder.instructions()[first, end) (the graph call, from an empty stack) with a
// handler that calls `on_failure` and jumps to a copy of the original's instructions after
// its prefix, which it appends.
void append_eager_fallback(CodeBuilder& builder, std::size_t first, std::size_t end, const EagerFallback& fallback,
                           PyCodeObject* original /* borrowed */);

}  // namespace bytegraph::codegen
