// The symbolic state at a graph break, described so generated code can rebuild it: the
// value stack (bottom first), the locals the rest of the function may read and the contents
// of the frame's cell variables, each as a plan (trace/plan_writer.h). A value with no plan
// leaves `not_restorable` saying why: the frame then runs eagerly rather than be split.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "codegen/output_plan.h"
#include "codegen/side_effects.h"
#include "guards/source.h"
#include "python/ref.h"
#include "trace/tracer.h"

namespace bytegraph::trace {

struct BreakState {
  std::vector<codegen::OutputPlan> stack;                         // bottom first
  std::vector<std::pair<std::string, codegen::OutputPlan>> locals;  // live, bound locals, in slot order
  std::vector<std::pair<std::string, codegen::OutputPlan>> cells;   // bound cell variables' contents
  std::vector<codegen::SideEffectPlan> side_effects;                // changes written back before resuming
  std::vector<codegen::OutputPlan> new_objects;                     // objects made in the trace, made first
  py::Ref<> kw_names;          // the pending KW_NAMES tuple of a CALL, or null
  std::string not_restorable;  // empty when every value has a plan
  bool grad_enabled = true;    // the grad mode at the break (inside any grad-mode blocks)
};

// Appends the graph nodes the plans read to `outputs` (stack, locals, cells).
BreakState describe_break_state(Tracer& tracer, const FrameState& frame, std::vector<int>& outputs);

}  // namespace bytegraph::trace
