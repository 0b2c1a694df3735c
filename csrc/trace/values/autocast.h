// torch.autocast inside a traced function: `with torch.autocast("cpu", dtype=...):` is
// recorded into the graph as torch.amp.autocast_mode._enter_autocast / _exit_autocast (what
// torch.compile's graphs hold, and what every backend runs), and switches the real autocast
// state while tracing so the ops on fakes compute in the dtypes they will at run time.
#pragma once

#include "trace/value.h"

namespace bytegraph::trace {

// The class torch.autocast (making one reads no state), or one made in the trace from
// constant arguments.
class AutocastValue : public Value {
 public:
  explicit AutocastValue(guards::SourcePtr source) : Value(std::move(source)) {}
  AutocastValue(py::Ref<> real, Args arguments) : real_(std::move(real)), arguments_(std::move(arguments)) {}
  std::string repr() const override;
  PyObject* python_type() const override;
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  // Enters autocast (recorded, and for real); __enter__ returns the object itself.
  std::optional<std::pair<ValuePtr, ValuePtr>> enter_with(Tracer& tracer) override;
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;

 private:
  bool is_class() const { return !real_; }
  py::Ref<> real_;   // the object made while tracing (null: the class)
  Args arguments_;   // device_type, dtype, enabled, cache_enabled (constants, defaults filled)
};

// The __exit__ of an autocast block entered in the trace: records _exit_autocast of the node
// that entered it and leaves autocast for real. A break inside such a block rolls the trace
// back to its `with` (see run_frame): generated code does not re-enter it.
class AutocastExitValue : public Value {
 public:
  AutocastExitValue(int enter_node, py::Ref<> mode) : enter_node_(enter_node), mode_(std::move(mode)) {}
  std::string repr() const override { return "AutocastExit"; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;

 private:
  int enter_node_;
  py::Ref<> mode_;  // the real mode entered while tracing
  bool exited_ = false;
};

// Leaves the real autocast modes the trace entered after the first `keep` (innermost first).
void exit_autocast_modes(Tracer& tracer, size_t keep);

}  // namespace bytegraph::trace
