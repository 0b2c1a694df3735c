// The symbolic state at a graph break, described so generated code can rebuild it: the
// value stack (bottom first) and the locals the rest of the function may read.
//
// Each value becomes a plan (the tree `TraceResult::output` uses, see codegen/output_plan.h):
// GraphOutput(i) for tensors computed by the graph, Source(name) for values read from the
// frame (inputs, globals, attributes: re-read, so identity is kept), Constant(v), tuples,
// lists and dicts of plans, Iterator([plans]) for a loop's iterator (its remaining items),
// Attr(plan, name) for a method read and not called yet (`x.add`, `xs.append`),
// BoundMethod(function plan, self plan) for a user method (`self.helper`),
// MakeFunction(code, closure names, defaults, kwdefaults) for a function made in the frame,
// GradModeExit(previous) for the exit of a `with torch.no_grad()/enable_grad()` block and
// Null() for the NULL of the call protocol. Anything else (a function made in the frame, a
// bound method, a cell) cannot be rebuilt: `not_restorable` then says why, and the frame
// must run eagerly rather than be split.
#pragma once

#include <string>
#include <vector>

#include "guards/source.h"
#include "python/ref.h"
#include "trace/tracer.h"

namespace bytegraph::trace {

struct BreakState {
  py::Ref<> stack;     // list of plans, bottom first
  py::Ref<> locals;    // {name: plan}: live, bound locals, in slot order
  py::Ref<> cells;     // {name: plan}: the contents of this frame's bound cell variables
  py::Ref<> kw_names;  // the pending KW_NAMES tuple of a CALL, or None
  std::string not_restorable;  // empty when every value has a plan
  bool grad_enabled = true;    // the grad mode at the break (inside any grad-mode blocks)
};

// Appends the graph nodes the plans read to `outputs` (locals first, then the stack) and the
// sources they re-read to `sources`.
BreakState describe_break_state(Tracer& tracer, const FrameState& frame, std::vector<int>& outputs,
                                std::vector<guards::SourcePtr>& sources);

}  // namespace bytegraph::trace
