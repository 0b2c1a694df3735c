#include "python/errors.h"

#include <new>

#include "python/break_kinds.h"
#include "python/version.h"

namespace bytegraph {
namespace {

// Created once at import and never released: exception classes live as long as the module.
PyObject* g_unsupported_type = nullptr;
PyObject* g_internal_error_type = nullptr;

py::Ref<> string_list(const std::vector<std::string>& items) {
  py::Ref<> list = check(PyList_New(static_cast<Py_ssize_t>(items.size())));
  for (size_t i = 0; i < items.size(); ++i) {
    PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i), check(PyUnicode_FromString(items[i].c_str())).release());
  }
  return list;
}

void set_attribute(PyObject* object, const char* name, py::Ref<> value) {
  check_status(PyObject_SetAttrString(object, name, value.get()));
}

py::Ref<> text(std::string_view value) {
  return check(PyUnicode_FromStringAndSize(value.data(), static_cast<Py_ssize_t>(value.size())));
}

void raise_internal_error(const char* what) {
  PyObject* type = g_internal_error_type != nullptr ? g_internal_error_type : PyExc_SystemError;
  PyErr_Format(type, "bytegraph internal error: %s", what);
}

void mark_raised_error_for_caller() {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (value != nullptr && PyObject_SetAttrString(value, kPropagateAttribute, Py_True) < 0) PyErr_Clear();
  PyErr_Restore(type, value, traceback);
}

}  // namespace

PythonError::PythonError(py::Ref<> type, py::Ref<> value, py::Ref<> traceback)
    : type_(std::move(type)), value_(std::move(value)), traceback_(std::move(traceback)) {
  if (value_) {
    if (py::Ref<> text = py::Ref<>::steal(PyObject_Str(value_.get()))) {
      if (const char* utf8 = PyUnicode_AsUTF8(text.get())) message_ = utf8;
    }
    PyErr_Clear();
  }
  if (type_) {
    message_ = std::string(reinterpret_cast<PyTypeObject*>(type_.get())->tp_name) +
               (message_.empty() ? "" : ": " + message_);
    interrupt_ = !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type_.get()),
                                   reinterpret_cast<PyTypeObject*>(PyExc_Exception));
  }
}

PythonError PythonError::fetch() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  if (traceback != nullptr && value != nullptr) PyException_SetTraceback(value, traceback);
  if (type == nullptr) {
    // Called without a pending exception: report it as our own bug rather than crash.
    type = Py_NewRef(PyExc_SystemError);
    value = PyUnicode_FromString("bytegraph: error reported without a Python exception set");
  }
  PythonError error(py::Ref<>::steal(type), py::Ref<>::steal(value), py::Ref<>::steal(traceback));
  if (error.is_interrupt()) throw std::move(error);
  return error;
}

PythonError PythonError::make(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  return fetch();
}

void PythonError::restore() {
  PyErr_Restore(type_.release(), value_.release(), traceback_.release());
}

void throw_python_error() { throw PythonError::fetch(); }

std::string_view Unsupported::hint() const { return break_hint(kind_); }

void init_exception_types(PyObject* module) {
  if (g_unsupported_type == nullptr) {
    g_unsupported_type = check(PyErr_NewExceptionWithDoc(
                                   "bytegraph._C.Unsupported",
                                   "A graph break: what bytegraph declines to capture. Attributes: kind (a stable "
                                   "name), message, hint (what the user can do) and user_stack (\"file:line in "
                                   "function\", outermost first); partial: the trace up to the break, when tracing rolled back "
                                   "to one.",
                                   PyExc_RuntimeError, nullptr))
                             .release();
    g_internal_error_type = check(PyErr_NewExceptionWithDoc(
                                      "bytegraph._C.InternalError", "A broken invariant inside bytegraph (a bug).",
                                      PyExc_SystemError, nullptr))
                                .release();
  }
  check_status(PyModule_AddObjectRef(module, "Unsupported", g_unsupported_type));
  check_status(PyModule_AddObjectRef(module, "InternalError", g_internal_error_type));
}

py::Ref<> unsupported_exception(const Unsupported& error) {
  if (g_unsupported_type == nullptr) throw InternalError("bytegraph._C.Unsupported is not created yet");
  std::string summary = error.kind() + ": " + error.what();
  py::Ref<> instance = check(PyObject_CallFunction(g_unsupported_type, "s", summary.c_str()));
  set_attribute(instance.get(), "kind", text(error.kind()));
  set_attribute(instance.get(), "message", text(error.what()));
  set_attribute(instance.get(), "hint", text(error.hint()));
  set_attribute(instance.get(), "user_stack", string_list(error.user_stack()));
  set_attribute(instance.get(), "partial", py::Ref<>::newref(Py_None));
  return instance;
}

void set_python_error_from_current_exception() noexcept {
  try {
    throw;
  } catch (PythonError& error) {
    error.restore();
  } catch (UserCodeError& error) {
    error.restore();
    mark_raised_error_for_caller();
  } catch (const Unsupported& error) {
    try {
      py::Ref<> instance = unsupported_exception(error);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(instance.get())), instance.get());
    } catch (PythonError& failure) {
      failure.restore();  // building the exception failed (e.g. out of memory): raise that
    } catch (...) {
      raise_internal_error(error.what());
    }
  } catch (const InternalError& error) {
    raise_internal_error(error.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& error) {
    raise_internal_error(error.what());
  } catch (...) {
    raise_internal_error("unknown C++ exception");
  }
}

}  // namespace bytegraph
