// A context manager the tracer models by its class alone (nullcontext, the profiler,
// DisableTorchFunctionSubclass): the class itself, or an instance made in the trace. Calling
// the class makes an instance; `with` on an instance is each kind's own.
#pragma once

#include <string>

#include "trace/value.h"

namespace bytegraph::trace {

class ContextClassValue : public Value {
 public:
  ContextClassValue(py::Ref<> cls, bool is_class, guards::SourcePtr source)
      : Value(std::move(source)), cls_(std::move(cls)), is_class_(is_class) {}
  PyObject* python_type() const override { return is_class_ ? (PyObject*)Py_TYPE(cls_.get()) : cls_.get(); }
  bool truthy(Tracer&) const override { return true; }

 protected:
  // `<kind>(<class name>[, class])`.
  std::string repr_as(const char* kind) const {
    return std::string(kind) + "(" + reinterpret_cast<PyTypeObject*>(cls_.get())->tp_name + (is_class_ ? ", class)" : ")");
  }

  py::Ref<> cls_;  // the class (is_class) or the class an instance was made from
  bool is_class_;
};

}  // namespace bytegraph::trace
