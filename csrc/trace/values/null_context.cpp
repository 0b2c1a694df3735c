// Profiler context managers in a traced function (see null_context.h).
#include "trace/values/null_context.h"

#include "trace/tracer.h"

namespace bytegraph::trace {

namespace {

bool real_grad_enabled(const Bridge& bridge) {
  py::Ref<> enabled = check(PyObject_CallNoArgs(bridge.is_grad_enabled.get()));
  return enabled.get() == Py_True;
}

}  // namespace

std::string NullContextValue::repr() const {
  return "NullContextVariable(" + std::string(reinterpret_cast<PyTypeObject*>(cls_.get())->tp_name) +
         (is_class_ ? ", class)" : ")");
}

PyObject* NullContextValue::python_type() const {
  return is_class_ ? (PyObject*)Py_TYPE(cls_.get()) : cls_.get();
}

ValuePtr NullContextValue::call(Tracer&, const Args&, const KwArgs&) {
  // The arguments (activities, a schedule, a label) configure profiling, which compiled code
  // does not do.
  if (!is_class_) unsupported("unsupported_call", "calling " + repr());
  return std::make_shared<NullContextValue>(cls_.copy(), false);
}

ValuePtr NullContextValue::enter(Tracer& tracer) {
  if (is_class_) unsupported("unsupported_context", "`with` on the class " + repr());
  return std::make_shared<NullContextExitValue>(real_grad_enabled(tracer.bridge));
}

ValuePtr NullContextExitValue::call(Tracer&, const Args&, const KwArgs&) { return make_bool(false); }

bool NullContextExitValue::re_enterable(Tracer& tracer) const { return real_grad_enabled(tracer.bridge) == previous(); }

}  // namespace bytegraph::trace
