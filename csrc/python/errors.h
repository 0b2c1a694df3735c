// The kinds of failure inside the core, and their one conversion back to Python.
//
// - `PythonError`: a Python exception was raised by something we called. It is captured
//   once (the interpreter's error indicator is cleared) and restored at most once.
// - `UserCodeError`: a Python exception raised by user code that bytegraph runs at compile
//   time on the user's behalf (a comptime function): it reaches the caller as raised.
// - `Unsupported`: something we decline to capture; the tracer turns it into a graph break.
//   Its kind is one of python/break_kinds.h.
// - `InternalError`: a broken invariant in bytegraph itself.
// Code inside the core throws these. `set_python_error_from_current_exception` is the one
// translator to Python exceptions: the frame hook and every nanobind binding use it, so an
// exception surfaces as the same Python type wherever it crosses into Python.
#pragma once

#include <Python.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "python/ref.h"

namespace bytegraph {

class PythonError : public std::exception {
 public:
  // Captures the currently raised Python exception. Must only be called with one set.
  // An interrupt (see is_interrupt) is thrown at once instead of returned, so that code
  // which fetches an error to turn it into a graph break lets interrupts through.
  static PythonError fetch();
  // Re-raises the captured exception in the interpreter. Valid once.
  void restore();
  // A Python error of the given type, for validation failures we detect ourselves.
  static PythonError make(PyObject* type, const std::string& message);

  const char* what() const noexcept override { return message_.c_str(); }
  PyObject* type() const { return type_.get(); }
  PyObject* value() const { return value_.get(); }
  // KeyboardInterrupt, SystemExit and other BaseExceptions that are not Exceptions: they
  // must reach the caller, never become a graph break or a fallback.
  bool is_interrupt() const { return interrupt_; }

 private:
  PythonError(py::Ref<> type, py::Ref<> value, py::Ref<> traceback);
  py::Ref<> type_, value_, traceback_;
  std::string message_;
  bool interrupt_ = false;
};

// An exception carrying this attribute (set to True) is meant for the caller: the frame hook
// lets it through instead of falling back to the unmodified frame (frame/eval_hook.h).
inline constexpr const char* kPropagateAttribute = "_bytegraph_propagate";

class UserCodeError : public std::exception {
 public:
  explicit UserCodeError(PythonError error) : error_(std::move(error)) {}
  const char* what() const noexcept override { return error_.what(); }
  void restore() { error_.restore(); }

 private:
  PythonError error_;
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

// An internal error whose message already names the user's line it happened on (the tracer
// adds it once, at the innermost frame; outer frames let it through).
class LocatedInternalError : public InternalError {
 public:
  using InternalError::InternalError;
};

// A graph break: what could not be captured, and why. `kind` is a stable short name
// ("unsupported_opcode", "data_dependent_branch", ...) registered in python/break_kinds.h,
// which tests and explain() rely on and which gives the break its hint.
class Unsupported : public std::runtime_error {
 public:
  Unsupported(std::string kind, std::string message)
      : std::runtime_error(std::move(message)), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }
  std::string_view hint() const;
  // The user's frames at the break ("file:line in function", outermost first), when known.
  const std::vector<std::string>& user_stack() const { return user_stack_; }
  void set_user_stack(std::vector<std::string> stack) { user_stack_ = std::move(stack); }

 private:
  std::string kind_;
  std::vector<std::string> user_stack_;
};

// Creates bytegraph._C.Unsupported and bytegraph._C.InternalError and adds them to `module`
// (once, at import). The translator raises instances of these.
void init_exception_types(PyObject* module /* borrowed */);

// A bytegraph._C.Unsupported instance for `error`: args ("kind: message",), attributes
// kind, message, hint, user_stack and partial (None; the tracer's bindings set it).
py::Ref<> unsupported_exception(const Unsupported& error);

// The translator: converts the exception being handled (call it inside a catch block) into
// a raised Python exception. PythonError and UserCodeError are restored as raised (the
// latter marked with kPropagateAttribute);
// Unsupported becomes bytegraph._C.Unsupported; InternalError and any other C++ exception
// become bytegraph._C.InternalError (std::bad_alloc: MemoryError).
void set_python_error_from_current_exception() noexcept;

}  // namespace bytegraph

#define BYTEGRAPH_CHECK(cond, msg)                                                           \
  do {                                                                                       \
    if (!(cond))                                                                             \
      throw ::bytegraph::InternalError(std::string(__FILE__ ":") + std::to_string(__LINE__) + \
                                       ": " + (msg));                                        \
  } while (0)
