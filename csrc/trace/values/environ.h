// os.environ in traced code: reads of environment variables, folded and guarded.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// Libraries read flags from the environment on hot paths (`os.environ.get("X", "0") == "1"`,
// `os.getenv`). Each read is computed at trace time and guarded on the variable itself (its
// value, or its absence, in os.environ's underlying dict), so changing it recompiles. Writes
// are not captured (a break).
class EnvironValue : public Value {
 public:
  EnvironValue(py::Ref<> environ, guards::SourcePtr source) : Value(std::move(source)), environ_(std::move(environ)) {}
  std::string repr() const override { return "EnvironVariable(os.environ)"; }
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(environ_.get()); }
  PyObject* real_object() const override { return environ_.get(); }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  ValuePtr get_item(Tracer& tracer, const ValuePtr& key) override;
  bool truthy(Tracer&) const override { return true; }
  // The variable's value now (null when unset), guarded.
  ValuePtr read(Tracer& tracer, const ValuePtr& key);

 private:
  py::Ref<> environ_;
};

// Whether `object` is os.environ (the tracer wraps it as an EnvironValue).
bool is_os_environ(PyObject* object);

}  // namespace bytegraph::trace
