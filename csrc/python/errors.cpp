#include "python/errors.h"

#include "python/version.h"

namespace bytegraph {

PythonError::PythonError(py::Ref<> type, py::Ref<> value, py::Ref<> traceback)
    : type_(std::move(type)), value_(std::move(value)), traceback_(std::move(traceback)) {
  if (value_) {
    if (py::Ref<> text = py::Ref<>::steal(PyObject_Str(value_.get()))) {
      if (const char* utf8 = PyUnicode_AsUTF8(text.get())) message_ = utf8;
    }
    PyErr_Clear();
  }
  if (type_) message_ = std::string(reinterpret_cast<PyTypeObject*>(type_.get())->tp_name) +
                        (message_.empty() ? "" : ": " + message_);
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
  return PythonError(py::Ref<>::steal(type), py::Ref<>::steal(value), py::Ref<>::steal(traceback));
}

PythonError PythonError::make(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  return fetch();
}

void PythonError::restore() {
  PyErr_Restore(type_.release(), value_.release(), traceback_.release());
}

void throw_python_error() { throw PythonError::fetch(); }

void set_python_error_from_current_exception() noexcept {
  try {
    throw;
  } catch (PythonError& error) {
    error.restore();
  } catch (Unsupported& error) {
    PyErr_Format(PyExc_RuntimeError, "bytegraph: unsupported (%s): %s", error.kind().c_str(),
                 error.what());
  } catch (InternalError& error) {
    PyErr_Format(PyExc_SystemError, "bytegraph internal error: %s", error.what());
  } catch (std::exception& error) {
    PyErr_Format(PyExc_SystemError, "bytegraph internal error: %s", error.what());
  } catch (...) {
    PyErr_SetString(PyExc_SystemError, "bytegraph internal error: unknown C++ exception");
  }
}

}  // namespace bytegraph
