// Calls that switch a piece of torch's process state in a traced function, recorded into the
// graph as torch.compile's graphs hold them and switched for real while tracing, so what the
// trace does after them (fake ops, folded queries of that state) sees the state they will run
// under:
// - torch.set_default_dtype (a context manager that sets and restores it, as torch's own
//   tests write one): the dtype factory calls make;
// - torch._C._autograd._saved_tensors_hooks_disable / _enable (what
//   torch.autograd.graph.disable_saved_tensors_hooks does): whether saved-tensor hooks may
//   be registered, and the error raised if one is. Its query,
//   _saved_tensors_hooks_get_disabled_error_message, folds to the state's value.
// A rollback, and the end of the trace, put the state back; the global-state guard pins the
// state each call starts with (saved-tensors hooks: only for a trace that used them).
#pragma once

#include "trace/value.h"

namespace bytegraph::trace {

enum class TorchState { DefaultDtype, SavedTensorsHooks };

class StateSwitchValue : public Value {
 public:
  StateSwitchValue(TorchState state, py::Ref<> function, guards::SourcePtr source)
      : Value(std::move(source)), state_(state), function_(std::move(function)) {}
  std::string repr() const override { return "StateSwitchVariable()"; }
  PyObject* real_object() const override { return function_.get(); }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;

 private:
  TorchState state_;
  py::Ref<> function_;
};

// What a switch changed: the state before it, to put back.
struct StateBefore {
  TorchState state;
  py::Ref<> value;
};

// Puts back the state as it was before the switches from `count` on (a rollback to a
// checkpoint holding `count` switches; 0 at the end of the trace).
void restore_torch_state(Tracer& tracer, size_t count);

}  // namespace bytegraph::trace
