// comptime: user Python code run *while tracing*, with read access to the live symbolic
// state (bytegraph.comptime, the counterpart of torch._dynamo.comptime).
//
// When the interpreter meets a call of the `comptime` marker function, it does not inline
// it: it builds a real callable from the argument, hands it a `ComptimeContext` bound to
// the tracer's frames, graph and guards, and pushes None as the call's result. The context
// is valid only for the duration of that call; afterwards every query raises, so a context
// kept by user code can never read a finished (destroyed) trace.
#pragma once

#include <Python.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/errors.h"
#include "python/ref.h"
#include "trace/tracer.h"
#include "trace/value.h"

namespace bytegraph::trace {

// One frame of the user's backtrace as the tracer sees it.
struct ComptimeFrame {
  std::string filename;
  std::string name;
  int lineno = -1;
  int offset = -1;  // of the instruction being executed in that frame
};

class ComptimeContext {
 public:
  explicit ComptimeContext(Tracer& tracer) : tracer_(&tracer) {}

  bool alive() const { return tracer_ != nullptr; }
  void invalidate() { tracer_ = nullptr; }

  // Frames are counted from the innermost: stacklevel 0 is the frame that called comptime,
  // 1 the frame that inlined it, and so on out to the traced function.
  size_t frame_count() const;
  const FrameState& frame(int stacklevel) const;
  PyObject* code(int stacklevel) const;  // borrowed
  int offset(int stacklevel) const;

  // A bound local (cells are read through); throws PythonError(NameError) if unbound.
  ValuePtr local(const std::string& name, int stacklevel) const;
  std::vector<std::pair<std::string, ValuePtr>> locals(int stacklevel) const;
  const Args& stack(int stacklevel) const;
  // The user backtrace, outermost first, ending at the frame `stacklevel`.
  std::vector<ComptimeFrame> backtrace(int stacklevel) const;

  // A GraphModule of everything recorded so far (no outputs). The trace's graph is not
  // changed: materialisation reads it.
  py::Ref<> graph_module() const;
  // The position of the tensor value's node among graph_module()'s nodes (-1 if none).
  int graph_position(const Value& value) const;
  // One line per guard installed so far, in the format of the final trace's guards.
  std::vector<std::string> guards() const;

  // Asks for a graph break at the comptime call; the tracer raises it once the user
  // function returns (or unwinds).
  void request_graph_break(std::string message) { break_message_ = std::move(message); }
  const std::optional<std::string>& requested_break() const { return break_message_; }

 private:
  Tracer& tracer() const;
  Tracer* tracer_;
  std::optional<std::string> break_message_;
};

// How the symbolic value looks to comptime users (ComptimeVar).
// The value's kind as a stable short name: "tensor", "constant", "list", "tuple", "dict",
// "user_function", "module", ... ("other" for kinds private to one handler family).
const char* comptime_value_kind(const Value& value);
// The runtime type, or null if the tracer does not know it (borrowed).
PyObject* comptime_python_type(const Value& value);
// The value as a real Python object if it is fully known at trace time (constants and
// containers of constants), else null.
py::Ref<> comptime_python_constant(const Value& value);

// Wraps a ComptimeContext into the Python object user functions receive. Set by the
// bindings (the core does not link nanobind).
using ComptimeContextFactory = py::Ref<> (*)(std::shared_ptr<ComptimeContext> context);
void set_comptime_context_factory(ComptimeContextFactory factory);

// A Python exception raised by a comptime function: it reaches the user as raised, instead
// of becoming a graph break as exceptions of traced code do.
class ComptimeError : public UserCodeError {
 public:
  using UserCodeError::UserCodeError;
};

// The `comptime` marker function itself (bytegraph.comptime), as the tracer sees it.
class ComptimeFunctionValue : public Value {
 public:
  ComptimeFunctionValue(py::Ref<> function, guards::SourcePtr source)
      : Value(std::move(source)), function_(std::move(function)) {}
  std::string repr() const override { return "ComptimeVariable()"; }
  PyObject* real_object() const override { return function_.get(); }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  // comptime.print_graph and the other wrappers: ordinary functions, inlined.
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;

 private:
  py::Ref<> function_;
};

}  // namespace bytegraph::trace
