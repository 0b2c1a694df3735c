#include "guards/tensor_meta.h"

#include <string>

#include "python/errors.h"
#include "python/import.h"

namespace bytegraph::guards {

namespace {

// getattr on the class returns the descriptor itself, not a bound value.
py::Ref<> class_attribute(PyTypeObject* type, const char* name) {
  return check(PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), name));
}

const PyGetSetDef* getset_of(const py::Ref<>& descriptor, const char* name) {
  if (!PyObject_TypeCheck(descriptor.get(), &PyGetSetDescr_Type)) {
    throw PythonError::make(PyExc_TypeError, std::string("torch._C.TensorBase.") + name +
                                                 " is not a getset descriptor");
  }
  return reinterpret_cast<PyGetSetDescrObject*>(descriptor.get())->d_getset;
}

py::Ref<> method_of(PyTypeObject* type, const char* name) {
  py::Ref<> method = class_attribute(type, name);
  if (!PyObject_TypeCheck(method.get(), &PyMethodDescr_Type)) {
    throw PythonError::make(PyExc_TypeError, std::string("torch._C.TensorBase.") + name + " is not a method");
  }
  return method;
}

}  // namespace

void TensorMeta::load() {
  py::Ref<> torch_c = import_module("torch._C");
  py::Ref<> base = check(PyObject_GetAttrString(torch_c.get(), "TensorBase"));
  if (!PyType_Check(base.get())) {
    throw PythonError::make(PyExc_TypeError, "torch._C.TensorBase is not a type");
  }
  tensor_base_ = py::Ref<PyTypeObject>::steal(base.release());
  const char* names[6] = {"dtype", "device", "shape", "requires_grad", "is_cpu", "is_meta"};
  const PyGetSetDef** slots[6] = {&dtype_, &device_, &shape_, &requires_grad_, &is_cpu_, &is_meta_};
  for (int i = 0; i < 6; ++i) {
    descriptors_[i] = class_attribute(tensor_base_.get(), names[i]);
    *slots[i] = getset_of(descriptors_[i], names[i]);
  }
  stride_ = method_of(tensor_base_.get(), "stride");
  storage_offset_ = method_of(tensor_base_.get(), "storage_offset");
  const char* flags[3] = {"is_inference", "is_conj", "is_neg"};
  for (int i = 0; i < 3; ++i) flag_methods_[i] = method_of(tensor_base_.get(), flags[i]);
  disable_subclass_ = check(PyObject_GetAttrString(torch_c.get(), "DisableTorchFunctionSubclass"));
  py::Ref<> torch = import_module("torch");
  py::Ref<> tensor = check(PyObject_GetAttrString(torch.get(), "Tensor"));
  py::Ref<> nn = check(PyObject_GetAttrString(torch.get(), "nn"));
  py::Ref<> parameter = check(PyObject_GetAttrString(nn.get(), "Parameter"));
  if (!PyType_Check(tensor.get()) || !PyType_Check(parameter.get()))
    throw PythonError::make(PyExc_TypeError, "torch.Tensor or torch.nn.Parameter is not a type");
  tensor_type_ = py::Ref<PyTypeObject>::steal(reinterpret_cast<PyTypeObject*>(tensor.release()));
  parameter_type_ = py::Ref<PyTypeObject>::steal(reinterpret_cast<PyTypeObject*>(parameter.release()));
}

SubclassDispatchOff::SubclassDispatchOff(PyObject* tensor) {
  const TensorMeta& meta = TensorMeta::get();
  if (!meta.is_tensor(tensor) || !meta.dispatches(tensor)) return;
  context_ = check(PyObject_CallNoArgs(meta.disable_subclass_dispatch()));
  check(PyObject_CallMethod(context_.get(), "__enter__", nullptr));
}

SubclassDispatchOff::~SubclassDispatchOff() {
  if (!context_) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject* result = PyObject_CallMethod(context_.get(), "__exit__", "OOO", Py_None, Py_None, Py_None);
  if (result == nullptr) PyErr_Clear();
  Py_XDECREF(result);
  PyErr_Restore(type, value, traceback);
}

namespace {

// A no-argument method descriptor called on `self`: through its C function when it takes no
// arguments (no bound method, no argument tuple), else by vectorcall. A new reference, or null.
PyObject* call_method_descriptor(PyObject* descriptor, PyObject* self) {
  PyMethodDef* def = reinterpret_cast<PyMethodDescrObject*>(descriptor)->d_method;
  int convention = def->ml_flags & (METH_VARARGS | METH_FASTCALL | METH_NOARGS | METH_O | METH_KEYWORDS | METH_METHOD);
  if (convention == METH_NOARGS) return def->ml_meth(self, nullptr);
  return PyObject_Vectorcall(descriptor, &self, 1, nullptr);
}

}  // namespace

int TensorMeta::dispatch_flags(PyObject* tensor) const {
  int flags = 0;
  for (int i = 0; i < 3; ++i) {
    py::Ref<> answer = py::Ref<>::steal(call_method_descriptor(flag_methods_[i].get(), tensor));
    if (!answer) return -1;
    if (answer.get() == Py_True) flags |= 1 << i;
  }
  return flags;
}

const TensorMeta& TensorMeta::get() {
  // Built once and never destroyed: guard trees may outlive any static destructor order,
  // and the references must not be released after the interpreter is finalized.
  static TensorMeta* instance = nullptr;
  if (instance == nullptr) {
    auto* fresh = new TensorMeta();
    try {
      fresh->load();
    } catch (...) {
      delete fresh;
      throw;
    }
    instance = fresh;
  }
  return *instance;
}

}  // namespace bytegraph::guards
