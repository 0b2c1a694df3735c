#include "frame/cache_entry.h"

#include "frame/code_cache.h"
#include "frame/frame_view.h"
#include "python/errors.h"

namespace bytegraph::frame {
namespace {

py::Ref<> code_attr(PyObject* code, const char* name) {
  return check(PyObject_GetAttrString(code, name));
}

std::string code_name(PyObject* code) {
  py::Ref<> qualname = check(PyObject_GetAttrString(code, "co_qualname"));
  const char* text = PyUnicode_AsUTF8(qualname.get());
  if (text == nullptr) throw_python_error();
  return text;
}

// Raises ValueError naming what differs; the index-preserving call convention depends on it.
void check_same(PyObject* original, const char* what, py::Ref<> original_value,
                py::Ref<> replacement_value) {
  int equal = PyObject_RichCompareBool(original_value.get(), replacement_value.get(), Py_EQ);
  if (equal < 0) throw_python_error();
  if (equal) return;
  py::Ref<> text = check(PyUnicode_FromFormat(
      "bytegraph: replacement code for %s must keep the original %s: expected %R, got %R",
      code_name(original).c_str(), what, original_value.get(), replacement_value.get()));
  PyErr_SetObject(PyExc_ValueError, text.get());
  throw_python_error();
}

void check_entry_invariants(PyCodeObject* original, PyObject* replacement) {
  if (!PyCode_Check(replacement)) {
    throw PythonError::make(PyExc_TypeError, "bytegraph: a cache entry needs a code object, got " +
                                                 std::string(Py_TYPE(replacement)->tp_name));
  }
  PyObject* original_object = reinterpret_cast<PyObject*>(original);
  auto* replacement_code = reinterpret_cast<PyCodeObject*>(replacement);
  int nargs = argument_slot_count(original);
  // Only the slot count matters: the replacement is called with every argument slot
  // positionally, so how its signature splits them (positional-only, keyword-only, *args)
  // does not change what it receives.
  check_same(original_object, "number of argument slots", check(PyLong_FromLong(nargs)),
             check(PyLong_FromLong(argument_slot_count(replacement_code))));
  py::Ref<> original_vars = code_attr(original_object, "co_varnames");
  py::Ref<> replacement_vars = code_attr(replacement, "co_varnames");
  check_same(original_object, "leading argument names",
             check(PyTuple_GetSlice(original_vars.get(), 0, nargs)),
             check(PyTuple_GetSlice(replacement_vars.get(), 0, nargs)));
  check_same(original_object, "co_freevars", code_attr(original_object, "co_freevars"),
             code_attr(replacement, "co_freevars"));
  check_same(original_object, "co_cellvars", code_attr(original_object, "co_cellvars"),
             code_attr(replacement, "co_cellvars"));
}

}  // namespace

std::vector<std::string> CacheEntry::describe_guards() const {
  if (!guards) return {};
  return guards->describe();
}

py::Ref<> make_positional_code(PyObject* code) {
  auto* typed = reinterpret_cast<PyCodeObject*>(code);
  py::Ref<> replace = check(PyObject_GetAttrString(code, "replace"));
  py::Ref<> no_args = check(PyTuple_New(0));
  py::Ref<> changes = check(Py_BuildValue(
      "{s:i,s:i,s:i,s:i}", "co_argcount", argument_slot_count(typed), "co_posonlyargcount", 0,
      "co_kwonlyargcount", 0, "co_flags", typed->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS)));
  return check(PyObject_Call(replace.get(), no_args.get(), changes.get()));
}

py::Ref<> make_entry_function(PyObject* positional_code, PyObject* original_function) {
  auto* original = reinterpret_cast<PyFunctionObject*>(original_function);
  py::Ref<> function = check(PyFunction_New(positional_code, original->func_globals));
  auto* built = reinterpret_cast<PyFunctionObject*>(function.get());
  // Names come from the user's function so reprs and error messages read like theirs.
  Py_XSETREF(built->func_name, Py_XNewRef(original->func_name));
  Py_XSETREF(built->func_qualname, Py_XNewRef(original->func_qualname));
  Py_XSETREF(built->func_module, Py_XNewRef(original->func_module));
  if (original->func_closure != nullptr) {
    check_status(PyFunction_SetClosure(function.get(), original->func_closure));
  }
  return function;
}

std::shared_ptr<CacheEntry> make_cache_entry(PyCodeObject* original, PyObject* function,
                                             py::Ref<> replacement,
                                             std::unique_ptr<guards::GuardTree> guards,
                                             py::Ref<> keepalive) {
  check_entry_invariants(original, replacement.get());
  if (function == nullptr || !PyFunction_Check(function)) {
    throw PythonError::make(PyExc_TypeError,
                            "bytegraph: a cache entry needs the frame's function object");
  }
  auto entry = std::make_shared<CacheEntry>();
  entry->positional_code = make_positional_code(replacement.get());
  entry->function = make_entry_function(entry->positional_code.get(), function);
  mark_own_code(reinterpret_cast<PyCodeObject*>(replacement.get()));
  mark_own_code(reinterpret_cast<PyCodeObject*>(entry->positional_code.get()));
  entry->code = std::move(replacement);
  entry->guards = std::move(guards);
  entry->keepalive = std::move(keepalive);
  return entry;
}

}  // namespace bytegraph::frame
