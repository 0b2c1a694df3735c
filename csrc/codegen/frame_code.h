// The code that replaces a traced frame, from its trace result in one place: the graph call
// and the rebuilt return value for a frame captured whole; the graph call, the rebuilt stack
// and locals, the breaking instruction and the resume calls for a frame split at a break.
//
// Planned before the backend runs (a frame that cannot be split is known without compiling
// its graph), generated once the compiled function exists.
#pragma once

#include <Python.h>

#include <string>
#include <vector>

#include "codegen/frame_split.h"
#include "codegen/graph_call.h"
#include "trace/trace.h"

namespace bytegraph::codegen {

struct FramePlan {
  py::Ref<> code;            // the code being replaced
  std::string eager_reason;  // non-empty: run the frame as it is
  std::vector<guards::SourcePtr> inputs;
  std::optional<OutputPlan> result;  // captured whole: the return value
  std::vector<SideEffectPlan> effects;  // captured whole: what is written back
  std::vector<OutputPlan> new_objects;  // captured whole: objects made first
  std::optional<FrameSplit> split;   // split at a break
  std::shared_ptr<trace::CodeInfo> decoded;

  std::vector<py::Ref<>> resume_codes() const;
};

FramePlan plan_frame(PyCodeObject* code /* borrowed */, const trace::TraceResult& result);

// `compiled_fn`: the backend's callable, or null when the graph has no operations.
// `on_failure`: when the graph raises, it is called with the exception, and the original code
// runs from its start if it returns (codegen/eager_fallback.h); null: the exception propagates.
py::Ref<> generate_frame_code(const FramePlan& plan, PyObject* compiled_fn /* borrowed, may be null */,
                              PyObject* on_failure /* borrowed, may be null */);

}  // namespace bytegraph::codegen
