// Exceptions in the trace: exception objects the code makes, raises and catches, and the
// C++ exception that carries a raised one through the interpreter to its handler.
//
// An exception object is an ObjectValue of an exception class. One the trace makes keeps its
// state (args, __context__, __cause__, ...) as attributes written in the trace, so generated
// code rebuilds it like any new object (cls.__new__(cls), then each attribute set). The
// classes modelled so are those whose builtin bases keep no more state than that; instances
// of the others (OSError, ImportError, ...) made from constants are made for real.
#pragma once

#include <string>

#include "trace/tracer.h"

namespace bytegraph::trace {

// A Python exception raised by the traced code itself: by `raise`, or by an operation the
// tracer folds (a missing key, a failing builtin). The interpreter unwinds it through the
// exception tables of the frames being traced, as CPython does; where no handler in the trace
// catches it, it is a graph break of its kind before the outermost instruction it escapes
// from, which then runs, and raises, for real.
class Raised : public Unsupported {
 public:
  Raised(ValuePtr exception, std::string kind, std::string message, bool reraise = false)
      : Unsupported(std::move(kind), std::move(message)), exception_(std::move(exception)), context_set_(reraise) {}
  const ValuePtr& exception() const { return exception_; }
  // Whether the exception is an instance of `type` (what an except clause for it catches).
  bool is_a(PyObject* type) const;
  // Python sets a raised exception's __context__ to the exception being handled where it is
  // raised (a re-raise keeps it): done once, by the frame it is raised in.
  bool context_set() const { return context_set_; }
  void mark_context_set() { context_set_ = true; }

 private:
  ValuePtr exception_;
  bool context_set_;
};

// Whether `type` is a class deriving from BaseException.
bool is_exception_class(PyObject* type);
// Whether `value`'s type is `type` or a subclass of it (false where the type is unknown).
bool is_instance_of(const Value& value, PyObject* type);
// Whether `value` is an exception object (its type derives from BaseException).
bool is_exception(const Value& value);

// `type(*args, **kwargs)` for an exception class: a new exception object (its Python __init__
// inlined), or for a class this does not model, one made for real from constant arguments.
ValuePtr make_exception(Tracer& tracer, PyObject* type, const Args& args, const KwArgs& kwargs,
                        guards::SourcePtr class_source = nullptr);

// The exception object for a Python exception raised by code the tracer ran for real.
ValuePtr exception_from_python(Tracer& tracer, PyObject* exception);

// The exception state attributes (args, __context__, __cause__, __suppress_context__,
// __traceback__, and a modelled builtin base's own fields) of an exception made in the trace.
bool is_exception_slot(PyObject* type, const std::string& name);
// Its value: as written in the trace, or the default a new exception has.
ValuePtr exception_slot(Tracer& tracer, const ObjectValue& exception, const std::string& name);
// BaseException.__init__(self, *args) on an exception made in the trace (super().__init__).
void init_exception(Tracer& tracer, ObjectValue& exception, const Args& args, const KwArgs& kwargs);
// A real exception of the same class and arguments, standing in for `value` where only its
// text is needed (str(e), f"{e!r}"); null when the text could run user code or depends on
// what the trace does not know.
py::Ref<> exception_text_stand_in(const ValuePtr& value);

// Raises `exception` (an exception object, or a class to instantiate) as `raise` does;
// `cause`, when given, as `raise exception from cause`.
[[noreturn]] void raise_value(Tracer& tracer, ValuePtr exception, ValuePtr cause = nullptr);
// Raises `exception` again as it is (a bare `raise`, the end of a finally block).
[[noreturn]] void reraise(const ValuePtr& exception);
// Raises `type(arg)` (`type()` without one), or `type(text)`, as an operation the tracer folds does (a missing key,
// an index out of range); `kind` names the break if nothing in the trace catches it.
[[noreturn]] void raise_error(const std::string& kind, PyObject* type, ValuePtr arg);
[[noreturn]] void raise_error(const std::string& kind, PyObject* type, const std::string& text);
// The same for an exception the tracer caught from code it ran for real.
[[noreturn]] void raise_python_error(Tracer& tracer, const PythonError& error, const char* kind = "python_error");
// What a generator's frame raises in place of `exception` (3.12+'s intrinsic; PEP 479): a
// StopIteration becomes a RuntimeError caused by it, anything else stays.
ValuePtr stop_iteration_error(const ValuePtr& exception);
// The same for an exception raised by folding an operation on constants (1 / 0, a missing
// key of a constant dict): its arguments are constants, or it is kept as the real object.
// sys.exception() and sys.exc_info(): the exception the trace's except blocks handle; outside
// them, the caller's, answered as none only while there is none (the global-state guard then
// checks that the frame starts with none handled).
class HandledExceptionQueryValue : public Value {
 public:
  HandledExceptionQueryValue(py::Ref<> function, bool exc_info, guards::SourcePtr source)
      : Value(std::move(source)), function_(std::move(function)), exc_info_(exc_info) {}
  std::string repr() const override { return exc_info_ ? "sys.exc_info" : "sys.exception"; }
  PyObject* real_object() const override { return function_.get(); }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;

 private:
  py::Ref<> function_;
  bool exc_info_;
};

[[noreturn]] void raise_folded_error(const PythonError& error, const std::string& message);
// Sets the __context__ of a raised exception to the one being handled (Python's implicit
// chaining); once per raise.
void chain_context(Tracer& tracer, Raised& raised);

}  // namespace bytegraph::trace
