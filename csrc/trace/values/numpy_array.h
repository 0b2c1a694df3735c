// NumPy arrays made from tensors inside a trace (`x.numpy()`, what np.* returns on them): the
// tensor stands for the array in the graph, and each NumPy operation on it is one node whose
// target computes it with torch._numpy (bytegraph/_numpy_interop.py), as torch.compile does.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

class NumpyArrayValue : public Value {
 public:
  explicit NumpyArrayValue(ValuePtr tensor) : tensor_(std::move(tensor)) {}
  std::string repr() const override { return "NumpyNdarrayVariable(" + tensor_->repr() + ")"; }
  PyObject* python_type() const override;
  bool truthy(Tracer& tracer) const override { return tensor_->truthy(tracer); }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;
  std::optional<Args> unpack(Tracer& tracer) override;
  const ValuePtr& tensor() const { return tensor_; }
  // The graph output made an ndarray again (its tensor's .numpy()).
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;

 private:
  ValuePtr tensor_;
};

// `tensor.numpy` (not yet called).
ValuePtr tensor_numpy_method(ValuePtr tensor);
// `tensor.numpy()`: the array view of a tensor (CPython's errors for one that requires grad).
ValuePtr tensor_to_numpy(Tracer& tracer, const ValuePtr& tensor);
// An operator with an array operand (a + a, a @ b, a[0]); null where no operand is an array.
ValuePtr numpy_operator(Tracer& tracer, PyObject* function, const Args& operands);
// The value standing for one of NumPy's functions (np.mean, np.fft.fft) read from outside.
ValuePtr wrap_numpy_function(Tracer& tracer, PyObject* real, const guards::SourcePtr& source);
// torch.from_numpy(a) / torch.as_tensor(a) of an array of the trace: its tensor; null otherwise.
ValuePtr tensor_of_array(PyObject* function, const Args& args, const KwArgs& kwargs);
// The function generated code calls to turn a returned array's tensor into an ndarray.
PyObject* to_numpy_function();

}  // namespace bytegraph::trace
