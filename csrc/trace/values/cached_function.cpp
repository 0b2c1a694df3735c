// lru_cache wrappers: see values/cached_function.h.
#include "trace/values/cached_function.h"

#include <unordered_set>

#include "trace/bridge.h"
#include "trace/operators.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

PyObject* lru_cache_wrapper_type() {
  static PyObject* type = [] {
    py::Ref<> functools = check(PyImport_ImportModule("functools"));
    return check(PyObject_GetAttrString(functools.get(), "_lru_cache_wrapper")).release();  // kept for the process
  }();
  return type;
}

// Once per wrapper in a process, as a UserWarning (so a test's warnings.catch_warnings sees it).
void warn_cache_bypassed(PyObject* wrapper, const std::string& name) {
  static std::unordered_set<PyObject*> warned;  // wrappers are pinned by the guards that read them
  if (!warned.insert(wrapper).second) return;
  std::string text = "bytegraph detected a call to a `functools.lru_cache`-wrapped function '" + name +
                     "': the compiled code calls the function itself, without its cache (the cache is neither "
                     "read nor filled), which changes nothing for a pure function";
  if (PyErr_WarnEx(PyExc_UserWarning, text.c_str(), 1) < 0) throw_python_error();
}

class CachedFunctionValue : public Value {
 public:
  CachedFunctionValue(py::Ref<> wrapper, guards::SourcePtr source) : Value(std::move(source)), wrapper_(std::move(wrapper)) {}
  std::string repr() const override { return "LruCacheWrapperVariable(" + name() + ")"; }
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(wrapper_.get()); }
  PyObject* real_object() const override { return wrapper_.get(); }
  bool truthy(Tracer&) const override { return true; }

  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    if (ValuePtr cached = cached_result(tracer, args, kwargs)) return cached;
    // The C wrapper calls the function it was made with; update_wrapper recorded that one as
    // __wrapped__, read once here and pinned with the wrapper.
    PyObject* wrapped = instance_attribute("__wrapped__");
    if (wrapped == nullptr) unsupported("unsupported_call", repr() + " without __wrapped__");
    warn_cache_bypassed(wrapper_.get(), name());
    ValuePtr function = tracer.wrap(wrapped, source() ? guards::attr_source(source(), "__wrapped__") : nullptr);
    return function->call(tracer, args, kwargs);
  }

  // On constant arguments the cache itself answers, as it would on every call of the eager
  // frame: the function runs at most once for these arguments (now, if the cache has not seen
  // them), so a function cached to act once (warn once, set up once) still acts once. Only an
  // immutable result is kept as a constant; the others (a tensor, a list the cache shares)
  // are computed by the inlined function instead.
  ValuePtr cached_result(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
    if (!all_constant(args, kwargs)) return nullptr;
    PyObject* result = call_with_constants(wrapper_.get(), args, kwargs);
    if (result == nullptr) {
      PythonError error = PythonError::fetch();
      raise_folded_error(error, repr() + " raised " + error.what());
    }
    py::Ref<> owned = py::Ref<>::steal(result);
    switch (classify(owned.get())) {
      case ObjectKind::Constant:
        return ConstantValue::make(std::move(owned));
      case ObjectKind::PythonModule:
      case ObjectKind::Class:
      case ObjectKind::UserClass:
        return tracer.wrap(owned.get(), nullptr);
      default:
        return nullptr;
    }
  }

  // What functools.update_wrapper copied (__name__, __doc__, __wrapped__, __dict__'s items)
  // lives in the wrapper's own __dict__: reading it runs no code.
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override {
    auto attr = [&] { return source() ? guards::attr_source(source(), name) : nullptr; };
    if (name == "__dict__") {
      PyObject** dict = _PyObject_GetDictPtr(wrapper_.get());
      if (dict && *dict) return tracer.wrap(*dict, attr());
    }
    if (PyObject* found = instance_attribute(name)) return tracer.wrap(found, attr());
    if (name == "__class__") return tracer.wrap(python_type(), attr());
    py::Ref<> key = check(PyUnicode_FromString(name.c_str()));
    if (_PyType_Lookup(Py_TYPE(wrapper_.get()), key.get()) != nullptr)
      unsupported("unsupported_attribute", repr() + "." + name + " (the cache's own methods act on it outside the graph)");
    // Absent: so it must stay (hasattr(wrapper, "x") answered False).
    if (source()) tracer.guards.add(GuardLog::Kind::LacksAttr, source(), key.get());
    raise_error("attribute_error", PyExc_AttributeError,
                "'functools._lru_cache_wrapper' object has no attribute '" + name + "'");
  }

 private:
  PyObject* instance_attribute(const std::string& name) const {
    PyObject** dict = _PyObject_GetDictPtr(wrapper_.get());
    if (dict == nullptr || *dict == nullptr) return nullptr;
    return PyDict_GetItemString(*dict, name.c_str());  // borrowed
  }
  std::string name() const {
    PyObject* found = instance_attribute("__qualname__");
    return found && PyUnicode_Check(found) ? PyUnicode_AsUTF8(found) : std::string("?");
  }

  py::Ref<> wrapper_;
};

}  // namespace

ValuePtr wrap_cached_function(Tracer& tracer, PyObject* real, const guards::SourcePtr& source) {
  if ((PyObject*)Py_TYPE(real) != lru_cache_wrapper_type()) return nullptr;
  tracer.guards.add(GuardLog::Kind::Id, source, real);
  return std::make_shared<CachedFunctionValue>(py::Ref<>::newref(real), source);
}

}  // namespace bytegraph::trace
