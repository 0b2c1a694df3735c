// torch.set_default_dtype in a traced function (a context manager that sets and restores it,
// as torch's own tests write one): recorded into the graph, as torch.compile's graphs hold it,
// and switched for real while tracing, so the ops after it are faked (and folded) under the
// dtype they will run under. A rollback, and the end of the trace, put the dtype back; the
// global-state guard pins the dtype each call starts with.
#pragma once

#include "trace/value.h"

namespace bytegraph::trace {

class SetDefaultDtypeValue : public Value {
 public:
  SetDefaultDtypeValue(py::Ref<> function, guards::SourcePtr source)
      : Value(std::move(source)), function_(std::move(function)) {}
  std::string repr() const override { return "SetDefaultDtypeVariable()"; }
  PyObject* real_object() const override { return function_.get(); }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;

 private:
  py::Ref<> function_;
};

// Puts back the default dtype as it was before the switches from `count` on (a rollback to a
// checkpoint holding `count` switches; 0 at the end of the trace).
void restore_default_dtype(Tracer& tracer, size_t count);

}  // namespace bytegraph::trace
