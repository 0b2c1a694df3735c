// The call protocol (the generated tables say where the NULL goes: [NULL, f, args] and
// [method, self, args] before 3.13, [f, NULL, args] and [method, self, args] since; keyword
// names from KW_NAMES or CALL_KW), calls with *args/**kwargs, and functions made during the
// trace (MAKE_FUNCTION with its flags, or 3.13's SET_FUNCTION_ATTRIBUTE).
#include "trace/interpreter.h"

namespace bytegraph::trace {

namespace {

using bytecode::Instruction;

KwArgs split_kwargs(FrameState& frame, Args& args) {
  KwArgs kwargs;
  if (!frame.kw_names) return kwargs;
  Py_ssize_t count = PyTuple_GET_SIZE(frame.kw_names.get());
  size_t first = args.size() - static_cast<size_t>(count);
  for (Py_ssize_t i = 0; i < count; ++i)
    kwargs.emplace_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(frame.kw_names.get(), i)), args[first + i]);
  args.resize(first);
  frame.kw_names.reset();
  return kwargs;
}

// Pops the two slots below the arguments and returns the function to call, inserting self
// in front of the arguments for a method call.
ValuePtr pop_callee(FrameState& frame, Args& args) {
  ValuePtr upper = frame.pop();
  ValuePtr lower = frame.pop();
  if (bytecode::kCallNullAfterCallable) {  // [callable, NULL] or [method, self]
    if (!upper->is_null()) args.insert(args.begin(), upper);
    return lower;
  }
  if (lower->is_null()) return upper;  // [NULL, callable]
  args.insert(args.begin(), upper);    // [method, self]
  return lower;
}

void call(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  Args args = frame.pop_n(inst.arg);
  KwArgs kwargs = split_kwargs(frame, args);
  ValuePtr function = pop_callee(frame, args);
  frame.push(function->call(tracer, args, kwargs));
}

// 3.13: the keyword names are a constant tuple on top of the arguments.
void call_kw(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr names = frame.pop();
  if (!names->is_constant() || !PyTuple_Check(names->constant())) throw InternalError("CALL_KW without a names tuple");
  frame.kw_names = py::Ref<>::newref(names->constant());
  call(tracer, frame, inst);
}

void call_function_ex(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr kwargs_value = (inst.arg & 1) ? frame.pop() : nullptr;
  ValuePtr args_value = frame.pop();
  // The call protocol's NULL sits above the callable (3.13+) or below it.
  if (bytecode::kCallNullAfterCallable && !frame.stack.empty() && frame.top()->is_null()) frame.pop();
  ValuePtr function = frame.pop();
  if (!bytecode::kCallNullAfterCallable && !frame.stack.empty() && frame.top()->is_null()) frame.pop();
  auto args = args_value->unpack(tracer);
  if (!args) unsupported("unsupported_call", "*args from " + args_value->repr());
  KwArgs kwargs;
  if (kwargs_value) {
    auto* dict = dynamic_cast<DictValue*>(kwargs_value.get());
    if (!dict) unsupported("unsupported_call", "**kwargs from " + kwargs_value->repr());
    for (size_t i = 0; i < dict->keys.size(); ++i) {
      if (!PyUnicode_Check(dict->keys[i].get())) unsupported("unsupported_call", "a non-string keyword");
      kwargs.emplace_back(PyUnicode_AsUTF8(dict->keys[i].get()), dict->values[i]);
    }
  }
  frame.push(function->call(tracer, *args, kwargs));
}

// MAKE_FUNCTION's flag bits, one per extra value.
constexpr int kDefaults = 0x01, kKwDefaults = 0x02, kAnnotations = 0x04, kClosure = 0x08;

void set_function_extra(Tracer& tracer, UserFunctionValue& function, int flag, const ValuePtr& value) {
  if (flag == kClosure) {
    auto* cells = dynamic_cast<SequenceValue*>(value.get());
    if (cells == nullptr) throw InternalError("MAKE_FUNCTION closure is not a tuple of cells");
    function.closure = cells->items;
  } else if (flag == kDefaults) {
    function.defaults = value->unpack(tracer).value_or(Args{});
  } else if (flag == kKwDefaults) {
    auto* dict = dynamic_cast<DictValue*>(value.get());
    if (!dict) unsupported("unsupported_call", "keyword defaults from " + value->repr());
    for (size_t i = 0; i < dict->keys.size(); ++i)
      function.kwdefaults.emplace_back(PyUnicode_AsUTF8(dict->keys[i].get()), dict->values[i]);
  } else if (flag == kAnnotations) {
    // Names and annotations alternating in a tuple (CPython makes the dict when it is read);
    // __annotations__ is that dict.
    std::optional<Args> items = value->unpack(tracer);
    if (!items || items->size() % 2 != 0) unsupported("unsupported_call", "annotations from " + value->repr());
    auto annotations = std::make_shared<DictValue>();
    for (size_t i = 0; i < items->size(); i += 2) {
      const ValuePtr& name = (*items)[i];
      if (!name->is_constant() || !PyUnicode_Check(name->constant())) throw InternalError("an annotation without a name");
      annotations->set_item(name->constant(), (*items)[i + 1]);
    }
    function.set_attr(tracer, "__annotations__", annotations);
  }
  // 3.13's type-parameter bit: irrelevant to tracing.
}

// With its flags as the argument, MAKE_FUNCTION pops the extras below the code, the highest
// flag on top; without (3.13+) it makes a bare function completed by SET_FUNCTION_ATTRIBUTE.
void make_function(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr code = frame.pop();
  py::Ref<> name = check(PyObject_GetAttrString(code->constant(), "co_name"));
  auto function = std::make_shared<UserFunctionValue>(py::Ref<>::newref(code->constant()), frame.globals.copy(),
                                                      PyUnicode_AsUTF8(name.get()));
  const int flags = inst.arg > 0 ? inst.arg : 0;
  for (int flag : {kClosure, kAnnotations, kKwDefaults, kDefaults})
    if (flags & flag) set_function_extra(tracer, *function, flag, frame.pop());
  frame.push(function);
}

void set_function_attribute(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr function = frame.pop();
  ValuePtr value = frame.pop();
  auto* made = dynamic_cast<UserFunctionValue*>(function.get());
  if (made == nullptr) throw InternalError("SET_FUNCTION_ATTRIBUTE on " + function->repr());
  set_function_extra(tracer, *made, inst.arg, value);
  frame.push(std::move(function));
}

}  // namespace

void register_call_handlers(HandlerTable& table) {
  table.add(op::CALL, call);
  table.add(op::CALL_FUNCTION_EX, call_function_ex);
  table.add(op::MAKE_FUNCTION, make_function);
  table.add(Family::kCallKw, call_kw);
  table.add(Family::kSetFunctionAttribute, set_function_attribute);
}

}  // namespace bytegraph::trace
