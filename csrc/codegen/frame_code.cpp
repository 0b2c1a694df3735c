#include "codegen/frame_code.h"

#include "python/errors.h"

namespace bytegraph::codegen {

std::vector<py::Ref<>> FramePlan::resume_codes() const {
  std::vector<py::Ref<>> codes;
  if (split)
    for (const ResumeCall& resume : split->call.resumes) codes.push_back(resume.code.copy());
  return codes;
}

FramePlan plan_frame(PyCodeObject* code, const trace::TraceResult& result) {
  FramePlan plan;
  plan.code = py::Ref<>::newref(reinterpret_cast<PyObject*>(code));
  plan.inputs = result.input_sources;
  plan.decoded = result.code;
  if (result.code == nullptr || result.code->code.get() != reinterpret_cast<PyObject*>(code))
    throw InternalError("plan_frame: the trace result is not of this code");
  if (!result.graph_break) {
    plan.result = *result.output;
    plan.effects = result.side_effects;
    plan.new_objects = result.new_objects;
    return plan;
  }
  plan.split = plan_split(code, result);
  plan.eager_reason = plan.split->eager_reason;
  return plan;
}

py::Ref<> generate_frame_code(const FramePlan& plan, PyObject* compiled_fn, PyObject* on_failure) {
  if (!plan.eager_reason.empty()) throw InternalError("generate_frame_code: this frame runs eagerly (" + plan.eager_reason + ")");
  auto* code = reinterpret_cast<PyCodeObject*>(plan.code.get());
  EagerFallback fallback;
  if (on_failure != nullptr && compiled_fn != nullptr) {
    fallback.on_failure = py::Ref<>::newref(on_failure);
    fallback.original = &plan.decoded->instructions;
  }
  if (plan.result) {
    GraphCall call;
    call.inputs = plan.inputs;
    if (compiled_fn) call.compiled_fn = py::Ref<>::newref(compiled_fn);
    call.result = *plan.result;
    call.effects = plan.effects;
    call.new_objects = plan.new_objects;
    call.fallback = std::move(fallback);
    return generate_graph_call(code, call);
  }
  return generate_break_call(code, plan.decoded->instructions, plan.split->site, plan.split->call, plan.inputs,
                             compiled_fn, fallback);
}

}  // namespace bytegraph::codegen
