// The 3.11/3.12 call protocol ([NULL, f, args] or [f, self, args], KW_NAMES), calls with
// *args/**kwargs, and functions made during the trace.
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

void call(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  Args args = frame.pop_n(inst.arg);
  KwArgs kwargs = split_kwargs(frame, args);
  ValuePtr second = frame.pop();  // the callable, or self of a method
  ValuePtr first = frame.pop();   // NULL, or the method
  ValuePtr function = second;
  if (!first->is_null()) {
    function = first;
    args.insert(args.begin(), second);
  }
  frame.push(function->call(tracer, args, kwargs));
}

void call_function_ex(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr kwargs_value = (inst.arg & 1) ? frame.pop() : nullptr;
  ValuePtr args_value = frame.pop();
  ValuePtr function = frame.pop();
  if (!frame.stack.empty() && frame.top()->is_null()) frame.pop();
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

void make_function(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr code = frame.pop();
  ValuePtr closure = (inst.arg & 0x08) ? frame.pop() : nullptr;
  if (inst.arg & 0x04) frame.pop();  // annotations: irrelevant to tracing
  ValuePtr kwdefaults = (inst.arg & 0x02) ? frame.pop() : nullptr;
  ValuePtr defaults = (inst.arg & 0x01) ? frame.pop() : nullptr;
  py::Ref<> name = check(PyObject_GetAttrString(code->constant(), "co_name"));
  auto function = std::make_shared<UserFunctionValue>(py::Ref<>::newref(code->constant()), frame.globals.copy(),
                                                      PyUnicode_AsUTF8(name.get()));
  if (closure) {
    auto* cells = dynamic_cast<SequenceValue*>(closure.get());
    if (cells == nullptr) throw InternalError("MAKE_FUNCTION closure is not a tuple of cells");
    function->closure = cells->items;
  }
  if (defaults) function->defaults = defaults->unpack(tracer).value_or(Args{});
  if (kwdefaults) {
    auto* dict = dynamic_cast<DictValue*>(kwdefaults.get());
    if (!dict) unsupported("unsupported_call", "keyword defaults from " + kwdefaults->repr());
    for (size_t i = 0; i < dict->keys.size(); ++i)
      function->kwdefaults.emplace_back(PyUnicode_AsUTF8(dict->keys[i].get()), dict->values[i]);
  }
  frame.push(function);
}

}  // namespace

void register_call_handlers(HandlerTable& table) {
  table.add("CALL", call);
  table.add("CALL_FUNCTION_EX", call_function_ex);
  table.add("MAKE_FUNCTION", make_function);
}

}  // namespace bytegraph::trace
