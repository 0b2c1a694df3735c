// `__torch_function__` of tensor subclasses, traced as Python runs it (torch.overrides): an
// operation whose arguments include a tensor of a subclass calls each such class's
// `__torch_function__(func, types, args, kwargs)`, subclasses before their bases, until one
// answers something other than NotImplemented. A user's override is inlined like any
// classmethod; torch.Tensor's own (what `super().__torch_function__` reaches) runs the op with
// subclass dispatch off and gives tensor results the class (`as_subclass`). The graph holds
// plain ops: it runs with subclass dispatch off, and generated code gives its outputs their
// classes back.
#pragma once

#include "graph/graph.h"
#include "trace/value.h"
#include "trace/values/context_class.h"

namespace bytegraph::trace {

// The result of the op dispatched through the subclasses' overrides, or null when no argument
// is a tensor of a subclass or dispatch is off (inside an override, as in eager).
ValuePtr dispatch_torch_function(Tracer& tracer, graph::Op op, PyObject* target, const Args& args,
                                 const KwArgs& kwargs);

// Reading attribute `name` of a tensor of a dispatching subclass: the overrides are handed
// torch.Tensor.<name>.__get__, as eager does for the attributes torch defines in C (x.T,
// x.shape, x.dtype, ...). Null when nothing dispatches.
ValuePtr dispatch_attribute_read(Tracer& tracer, const ValuePtr& tensor, const std::string& name);

// A real tensor entering the trace (an input, a module's tensor): one of a dispatching subclass
// makes the graph run with subclass dispatch off, as the trace models dispatch itself.
void note_real_tensor(Tracer& tracer, PyObject* tensor);

// `tensor.as_subclass(cls)`: the same tensor (no graph op) seen as a `cls` from now on.
ValuePtr as_subclass(Tracer& tracer, const ValuePtr& tensor, const ValuePtr& cls);

// Whether `function` is torch.Tensor.__torch_function__'s (the function under the classmethod).
bool is_default_torch_function(PyObject* function);

// torch.Tensor.__torch_function__ (the function under the classmethod): called with the class first.
class DefaultTorchFunctionValue : public Value {
 public:
  explicit DefaultTorchFunctionValue(py::Ref<> function) : function_(std::move(function)) {}
  std::string repr() const override { return "DefaultTorchFunctionVariable()"; }
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(function_.get()); }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;

 private:
  py::Ref<> function_;
};

// torch._C.DisableTorchFunctionSubclass / DisableTorchFunction in traced code (the class, or
// an instance made in the trace): its block traces with subclass dispatch off. Nothing is
// recorded; a break inside the block cannot re-enter it, so the frame is not split there.
class SubclassDispatchSwitchValue : public ContextClassValue {
 public:
  SubclassDispatchSwitchValue(py::Ref<> cls, bool is_class, guards::SourcePtr source = nullptr)
      : ContextClassValue(std::move(cls), is_class, std::move(source)) {}
  std::string repr() const override { return repr_as("TorchFunctionDisableVariable"); }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  std::optional<std::pair<ValuePtr, ValuePtr>> enter_with(Tracer& tracer) override;
};

// Subclass dispatch off for a scope (an override's body, the default's op), as
// torch._C.DisableTorchFunctionSubclass does in eager.
class TorchFunctionSubclassOff {
 public:
  explicit TorchFunctionSubclassOff(Tracer& tracer);
  ~TorchFunctionSubclassOff();
  TorchFunctionSubclassOff(const TorchFunctionSubclassOff&) = delete;
  TorchFunctionSubclassOff& operator=(const TorchFunctionSubclassOff&) = delete;

 private:
  Tracer& tracer_;
  bool before_;
};

}  // namespace bytegraph::trace
