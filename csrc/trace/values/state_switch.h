// Calls that read or switch a piece of torch's process state in a traced function. A switch
// is recorded into the graph, as torch.compile's graphs hold them, and made for real while
// tracing, so what the trace does after it (fake ops, folded queries of that state) sees the
// state it will run under. A query folds to the state's value.
// - torch.set_default_dtype (a context manager that sets and restores it, as torch's own
//   tests write one): the dtype factory calls make;
// - torch._C._autograd._saved_tensors_hooks_disable / _enable (what
//   torch.autograd.graph.disable_saved_tensors_hooks does): whether saved-tensor hooks may
//   be registered, and the error raised if one is; its query is
//   _saved_tensors_hooks_get_disabled_error_message;
// - torch._C._set_sdp_use_{flash,mem_efficient,math,cudnn,overrideable} and
//   _set_sdp_priority_order (what torch.nn.attention.sdpa_kernel and
//   torch.backends.cuda.sdp_kernel do): which scaled-dot-product-attention backends may run;
//   the queries are the matching _get_*_sdp_enabled and _get_sdp_priority_order.
// A rollback, and the end of the trace, put the state back. The global-state guard pins the
// state each call starts with (all but the default dtype: only for a trace that used them).
#pragma once

#include "trace/value.h"

namespace bytegraph::trace {

enum class TorchState { DefaultDtype, SavedTensorsHooks, SdpBackends };

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

// What a switch changed: the state before it, and how to put it back.
struct StateBefore {
  TorchState state;
  py::Ref<> restore;  // the switch that puts it back: called with `value`, or with no argument
  py::Ref<> value;    // when null (enabling saved-tensors hooks again)
};

// Records the switch that puts back what `before` changed, as the graph's own node (it is
// itself a switch: a rollback or the end of the trace undoes it like any other).
void record_state_restore(Tracer& tracer, const StateBefore& before);

// The modelled state now, as one comparable tuple: grad mode, the saved-tensors-hooks message,
// the default dtype and the attention backends.
py::Ref<> torch_state_now(const Tracer& tracer);

// Puts back the state as it was before the switches from `count` on (a rollback to a
// checkpoint holding `count` switches; 0 at the end of the trace).
void restore_torch_state(Tracer& tracer, size_t count);

}  // namespace bytegraph::trace
