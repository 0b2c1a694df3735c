// The three kinds of failure inside the core, and their one conversion back to Python.
//
// - `PythonError`: a Python exception was raised by something we called. It is captured
//   once (the interpreter's error indicator is cleared) and restored at most once.
// - `Unsupported`: something we decline to capture; the tracer turns it into a graph break.
// - `InternalError`: a broken invariant in bytegraph itself.
// Code inside the core throws these; the frame hook and the bindings convert them at the edge.
#pragma once

#include <Python.h>

#include <stdexcept>
#include <string>

#include "python/ref.h"

namespace bytegraph {

class PythonError : public std::exception {
 public:
  // Captures the currently raised Python exception. Must only be called with one set.
  static PythonError fetch();
  // Re-raises the captured exception in the interpreter. Valid once.
  void restore();
  // A Python error of the given type, for validation failures we detect ourselves.
  static PythonError make(PyObject* type, const std::string& message);

  const char* what() const noexcept override { return message_.c_str(); }
  PyObject* type() const { return type_.get(); }
  PyObject* value() const { return value_.get(); }

 private:
  PythonError(py::Ref<> type, py::Ref<> value, py::Ref<> traceback);
  py::Ref<> type_, value_, traceback_;
  std::string message_;
};

// Throws a PythonError carrying the pending Python exception; for C API calls that failed.
[[noreturn]] void throw_python_error();

// Throws if `result` is null (a failed C API call), else takes ownership of it.
inline py::Ref<> check(PyObject* result) {
  if (result == nullptr) throw_python_error();
  return py::Ref<>::steal(result);
}
inline void check_status(int status) {
  if (status < 0) throw_python_error();
}

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// A graph break: what could not be captured, and why. `kind` is a stable short name
// ("unsupported_opcode", "data_dependent_branch", ...) that tests and explain() can rely on.
class Unsupported : public std::runtime_error {
 public:
  Unsupported(std::string kind, std::string message, std::string hint = {})
      : std::runtime_error(message), kind_(std::move(kind)), hint_(std::move(hint)) {}
  const std::string& kind() const { return kind_; }
  const std::string& hint() const { return hint_; }

 private:
  std::string kind_, hint_;
};

// Converts whatever the core threw into a raised Python exception (the one conversion
// point for callers that are not nanobind bindings, e.g. the frame hook).
void set_python_error_from_current_exception() noexcept;

}  // namespace bytegraph

#define BYTEGRAPH_CHECK(cond, msg)                                                           \
  do {                                                                                       \
    if (!(cond))                                                                             \
      throw ::bytegraph::InternalError(std::string(__FILE__ ":") + std::to_string(__LINE__) + \
                                       ": " + (msg));                                        \
  } while (0)
