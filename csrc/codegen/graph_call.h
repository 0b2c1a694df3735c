// Code generation for a frame captured whole: the new code object runs the original's
// prefix (MAKE_CELL / COPY_FREE_VARS / RESUME), calls the compiled graph with its inputs
// re-read from their sources, rebuilds the return value and returns it.
//
// Pre: `plan.inputs` are the graph's placeholders in order; every source is rooted in this
// frame (a local, a free variable, a global or builtin). Post: the code keeps the original's
// argument names, cell and free variables (the frame hook's invariants).
#pragma once

#include <Python.h>

#include <vector>

#include "codegen/eager_fallback.h"
#include "codegen/output_plan.h"
#include "codegen/side_effects.h"
#include "guards/source.h"
#include "python/ref.h"

namespace bytegraph::codegen {

struct GraphCall {
  std::vector<guards::SourcePtr> inputs;
  py::Ref<> compiled_fn;  // null when nothing was captured (the result is all constants/sources)
  OutputPlan result;
  std::vector<SideEffectPlan> effects;  // written back after the result is evaluated
  std::vector<OutputPlan> new_objects;  // made first (codegen/new_objects.h)
  EagerFallback fallback;               // when the graph raises (codegen/eager_fallback.h)
};

// Emits `compiled_fn(*inputs)` with each input re-read from its source; the output tuple
// is stored in kGraphOutputLocal when `keep_outputs`, else dropped.
void emit_graph_call(CodeBuilder& builder, const std::vector<guards::SourcePtr>& inputs, PyObject* compiled_fn /* borrowed */,
                     bool keep_outputs, PyCodeObject* original /* borrowed */);

py::Ref<> generate_graph_call(PyCodeObject* original /* borrowed */, const GraphCall& call);

}  // namespace bytegraph::codegen
