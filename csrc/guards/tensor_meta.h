// Reading tensor metadata without libtorch headers.
//
// torch exposes `dtype`, `device`, `shape`, `requires_grad`, `is_cpu` and `is_meta` on torch._C.TensorBase as
// getset descriptors, and `stride` and `storage_offset` as method descriptors. We look them up once, through
// Python, then call their C getters directly: no attribute lookup, no MRO walk, no
// descriptor protocol on the hot path. Everything here needs the GIL.
#pragma once

#include <Python.h>

#include "python/ref.h"

namespace bytegraph::guards {

class TensorMeta {
 public:
  // The process-wide accessors; the first call imports torch. Throws PythonError if torch or
  // one of the descriptors is missing (then the next call tries again).
  static const TensorMeta& get();

  bool is_tensor(PyObject* obj) const { return PyObject_TypeCheck(obj, tensor_base_.get()); }
  PyTypeObject* tensor_base() const { return tensor_base_.get(); }

  // Each returns a new reference, or null with a Python error set. `tensor` must be an
  // instance of TensorBase (the getters cast it without checking).
  PyObject* dtype(PyObject* tensor) const { return call_getter(dtype_, tensor); }
  PyObject* device(PyObject* tensor) const { return call_getter(device_, tensor); }
  PyObject* shape(PyObject* tensor) const { return call_getter(shape_, tensor); }
  PyObject* requires_grad(PyObject* tensor) const { return call_getter(requires_grad_, tensor); }
  // Py_True/Py_False without building a torch.device: the cheap device checks for the two
  // index-less devices (CPU and meta tensors never carry a device index).
  PyObject* is_cpu(PyObject* tensor) const { return call_getter(is_cpu_, tensor); }
  PyObject* is_meta(PyObject* tensor) const { return call_getter(is_meta_, tensor); }
  PyObject* stride(PyObject* tensor) const {
    // A method descriptor called with the instance as its only positional argument.
    return PyObject_Vectorcall(stride_.get(), &tensor, 1, nullptr);
  }
  PyObject* storage_offset(PyObject* tensor) const {
    return PyObject_Vectorcall(storage_offset_.get(), &tensor, 1, nullptr);
  }
  // What torch's dispatch key set says of the tensor beyond its dtype and device, as bits:
  // an inference tensor (no autograd or in-place tracking), a lazily conjugated or negated
  // view. -1 with a Python error set.
  enum DispatchFlag : int { kInference = 1, kConjugate = 2, kNegative = 4 };
  int dispatch_flags(PyObject* tensor) const;
  // Whether reading `tensor`'s metadata through the getters would run a __torch_function__
  // override (a subclass's; torch.Tensor and nn.Parameter have none).
  bool dispatches(PyObject* tensor) const {
    PyTypeObject* type = Py_TYPE(tensor);
    return type != tensor_type_.get() && type != parameter_type_.get();
  }
  bool is_parameter_type(PyObject* type) const { return type == reinterpret_cast<PyObject*>(parameter_type_.get()); }
  PyObject* disable_subclass_dispatch() const { return disable_subclass_.get(); }

 private:
  TensorMeta() = default;
  static PyObject* call_getter(const PyGetSetDef* def, PyObject* tensor) {
    return def->get(tensor, def->closure);
  }
  void load();

  py::Ref<PyTypeObject> tensor_base_;
  py::Ref<> descriptors_[6];  // keep the getset descriptors (and so their PyGetSetDefs) alive
  const PyGetSetDef* dtype_ = nullptr;
  const PyGetSetDef* device_ = nullptr;
  const PyGetSetDef* shape_ = nullptr;
  const PyGetSetDef* requires_grad_ = nullptr;
  const PyGetSetDef* is_cpu_ = nullptr;
  const PyGetSetDef* is_meta_ = nullptr;
  py::Ref<> stride_;
  py::Ref<> storage_offset_;
  py::Ref<> flag_methods_[3];  // is_inference, is_conj, is_neg, in DispatchFlag order
  py::Ref<PyTypeObject> tensor_type_, parameter_type_;
  py::Ref<> disable_subclass_;  // torch._C.DisableTorchFunctionSubclass
};

// Subclass __torch_function__ dispatch off for a scope in which real tensors' metadata is read
// (a guard's check, the tracer wrapping an input): reading it is bytegraph's business, and must
// not run the program's override. Costs nothing for a tensor that does not dispatch.
class SubclassDispatchOff {
 public:
  explicit SubclassDispatchOff(PyObject* tensor);
  ~SubclassDispatchOff();
  SubclassDispatchOff(const SubclassDispatchOff&) = delete;
  SubclassDispatchOff& operator=(const SubclassDispatchOff&) = delete;

 private:
  py::Ref<> context_;  // the entered torch._C.DisableTorchFunctionSubclass, or null
};

}  // namespace bytegraph::guards
