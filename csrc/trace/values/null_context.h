// Context managers that do nothing in compiled code: torch's profilers
// (`torch.profiler.profile`, `torch.autograd.profiler.profile`, `record_function`), as under
// torch.compile, which drops profiling inside compiled regions. Made and entered in the
// trace, they record nothing; a break inside their block re-enters nothing.
#pragma once

#include "trace/values/context_class.h"

namespace bytegraph::trace {

class NullContextValue : public ContextClassValue {
 public:
  NullContextValue(py::Ref<> cls, bool is_class, guards::SourcePtr source = nullptr)
      : ContextClassValue(std::move(cls), is_class, std::move(source)) {}
  std::string repr() const override { return repr_as("NullContextVariable"); }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  // Records nothing; __enter__ returns the object itself.
  std::optional<std::pair<ValuePtr, ValuePtr>> enter_with(Tracer& tracer) override;
};

// The __exit__ of a null context's block: records nothing. Planned as a grad-mode block's
// exit (generated code re-enters the grad mode the block was entered with, which changes
// nothing) while the mode is still that one; otherwise the block cannot be re-entered.
class NullContextExitValue : public GradModeExitValue {
 public:
  using GradModeExitValue::GradModeExitValue;
  std::string repr() const override { return "NullContextExit"; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  bool re_enterable(Tracer& tracer) const override;
};

}  // namespace bytegraph::trace
