// Raising exceptions and the opcodes of except and finally blocks. Unwinding a raised
// exception to the handler the exception table names is the interpreter loop's
// (interpreter.cpp); these keep the handled exception as CPython's exc_info does.
#include "bytecode/opcodes.h"
#include "trace/interpreter.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

using bytecode::Instruction;

void raise_varargs(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  if (inst.arg == 0) {
    // A bare `raise`: the exception being handled, as it is (no new context).
    const ValuePtr& handled = tracer.handled_exception;
    if (!handled) unsupported("uncaught_exception", "a bare `raise` outside the trace's except blocks re-raises the caller's exception");
    if (handled->is_constant()) raise_error("python_error", PyExc_RuntimeError, "No active exception to reraise");
    reraise(handled);
  }
  ValuePtr cause = inst.arg == 2 ? frame.pop() : nullptr;
  raise_value(tracer, frame.pop(), std::move(cause));
}

// The end of a finally block or of an unmatched except clause: the exception goes on.
void reraise_handler(Tracer&, FrameState& frame, const Instruction&) { reraise(frame.pop()); }

// Entering a handler: [exception] -> [the exception handled before, exception].
void push_exc_info(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr exception = frame.pop();
  // NULL stands for "whatever was handled outside the trace" (no break is split inside a
  // handler, so it never needs rebuilding).
  frame.push(tracer.handled_exception ? tracer.handled_exception : NullValue::get());
  frame.push(exception);
  tracer.handled_exception = std::move(exception);
  ++frame.handlers_open;
}

// Leaving a handler: the exception handled before it is handled again.
void pop_except(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr previous = frame.pop();
  tracer.handled_exception = previous->is_null() ? nullptr : std::move(previous);
  if (frame.handlers_open > 0) --frame.handlers_open;
}

// The class (or tuple of classes) an except clause names, checked as CPython checks it.
py::Ref<> clause_classes(const ValuePtr& value) {
  auto reject = [&]() -> py::Ref<> {
    raise_error("python_error", PyExc_TypeError, "catching classes that do not inherit from BaseException is not allowed");
  };
  if (auto* tuple = dynamic_cast<SequenceValue*>(value.get()); tuple && !tuple->is_list()) {
    py::Ref<> classes = check(PyTuple_New(static_cast<Py_ssize_t>(tuple->items.size())));
    for (size_t i = 0; i < tuple->items.size(); ++i) {
      PyObject* real = tuple->items[i]->real_object();
      if (real == nullptr || !is_exception_class(real)) return reject();
      PyTuple_SET_ITEM(classes.get(), static_cast<Py_ssize_t>(i), py::Ref<>::newref(real).release());
    }
    return classes;
  }
  PyObject* real = value->is_constant() ? value->constant() : value->real_object();
  if (real != nullptr && PyTuple_Check(real)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(real); ++i)
      if (!is_exception_class(PyTuple_GET_ITEM(real, i))) return reject();
    return py::Ref<>::newref(real);
  }
  if (real == nullptr || !is_exception_class(real)) return reject();
  return py::Ref<>::newref(real);
}

// `except E:` — [exception, E] -> [exception, isinstance(exception, E)].
void check_exc_match(Tracer&, FrameState& frame, const Instruction&) {
  py::Ref<> classes = clause_classes(frame.pop());
  PyObject* type = frame.top()->python_type();
  if (type == nullptr) throw InternalError("an except clause matched against " + frame.top()->repr());
  const int matches = PyObject_IsSubclass(type, classes.get());
  check_status(matches);
  frame.push(ConstantValue::make(py::Ref<>::newref(matches ? Py_True : Py_False)));
}

// A `with` block left by an exception: __exit__(type, exception, traceback), whose result says
// whether the exception is suppressed. The stack is [exit, lasti, previous, exception].
void with_except_start(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr exception = frame.top();
  ValuePtr exit = frame.top(3);
  PyObject* type = exception->python_type();
  if (type == nullptr) throw InternalError("a with block left by " + exception->repr());
  ValuePtr traceback = ConstantValue::none();
  frame.push(exit->call(tracer, {tracer.wrap(type, nullptr), exception, traceback}, {}));
}

// The handler of a `yield from`'s yield, reached when an exception is thrown in (3.12+):
// [delegate, last sent, exception] -> [None, value] for the delegate's StopIteration (the value
// `yield from` evaluates to); any other exception goes on.
void cleanup_throw(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr exception = frame.pop();
  frame.pop();
  frame.pop();
  if (!is_instance_of(*exception, PyExc_StopIteration)) reraise(exception);
  frame.push(ConstantValue::none());
  frame.push(exception->get_attr(tracer, "value"));
}

void load_assertion_error(Tracer& tracer, FrameState& frame, const Instruction&) {
  frame.push(tracer.wrap(PyExc_AssertionError, nullptr));
}

}  // namespace

void register_exception_handlers(HandlerTable& table) {
  namespace op = bytecode::op;
  table.add(op::RAISE_VARARGS, raise_varargs);
  table.add(op::RERAISE, reraise_handler);
  table.add(op::PUSH_EXC_INFO, push_exc_info);
  table.add(op::POP_EXCEPT, pop_except);
  table.add(op::CHECK_EXC_MATCH, check_exc_match);
  table.add(op::WITH_EXCEPT_START, with_except_start);
  table.add(op::LOAD_ASSERTION_ERROR, load_assertion_error);
  table.add(bytecode::Family::kCleanupThrow, cleanup_throw);
}

}  // namespace bytegraph::trace
