// Switches of torch's process state while tracing (see state_switch.h).
#include "trace/values/state_switch.h"

#include "python/import.h"
#include "trace/tracer.h"

namespace bytegraph::trace {

namespace {

struct StateFunctions {
  py::Ref<> get_dtype, set_dtype;  // torch.get_default_dtype, torch._C._set_default_dtype
  // torch._C._autograd's: the message while disabled (None while enabled), and the switches.
  py::Ref<> hooks_message, hooks_disable, hooks_enable;

  static const StateFunctions& get() {
    static StateFunctions* functions = [] {  // leaked: lives as long as the interpreter
      auto* f = new StateFunctions();
      py::Ref<> torch = check(PyImport_ImportModule("torch"));
      f->get_dtype = check(PyObject_GetAttrString(torch.get(), "get_default_dtype"));
      py::Ref<> torch_c = check(PyObject_GetAttrString(torch.get(), "_C"));
      f->set_dtype = check(PyObject_GetAttrString(torch_c.get(), "_set_default_dtype"));
      py::Ref<> autograd = check(PyObject_GetAttrString(torch_c.get(), "_autograd"));
      f->hooks_message = check(PyObject_GetAttrString(autograd.get(), "_saved_tensors_hooks_get_disabled_error_message"));
      f->hooks_disable = check(PyObject_GetAttrString(autograd.get(), "_saved_tensors_hooks_disable"));
      f->hooks_enable = check(PyObject_GetAttrString(autograd.get(), "_saved_tensors_hooks_enable"));
      return f;
    }();
    return *functions;
  }
};

bool is_constant_string(const ValuePtr& value) {
  return value->is_constant() && PyUnicode_Check(value->constant());
}

}  // namespace

ValuePtr StateSwitchValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  const StateFunctions& functions = StateFunctions::get();
  py::Ref<> before;
  if (state_ == TorchState::DefaultDtype) {
    if (args.size() != 1 || !kwargs.empty() || !args[0]->is_constant())
      unsupported("unsupported_call", "torch.set_default_dtype with these arguments");
    before = check(PyObject_CallNoArgs(functions.get_dtype.get()));
  } else {
    tracer.read_saved_tensors_hooks = true;
    if (function_.get() == functions.hooks_message.get()) {  // the query: folded
      if (!args.empty() || !kwargs.empty()) unsupported("unsupported_call", "the saved-tensors-hooks query with arguments");
      return ConstantValue::make(check(PyObject_CallNoArgs(function_.get())));
    }
    const bool disable = function_.get() == functions.hooks_disable.get();
    if (!kwargs.empty() || (disable ? args.size() != 1 || !is_constant_string(args[0]) : !args.empty()))
      unsupported("unsupported_call", "a saved-tensors-hooks switch with these arguments");
    before = check(PyObject_CallNoArgs(functions.hooks_message.get()));
  }
  // Recording runs it on constants, which is the real call (it raises where torch refuses,
  // which the trace reports as the program's error).
  ValuePtr result = tracer.record(graph::Op::CallFunction, function_.copy(), args, {});
  tracer.torch_state_before.push_back(StateBefore{state_, std::move(before)});
  return result;
}

void restore_torch_state(Tracer& tracer, size_t count) {
  const StateFunctions& functions = StateFunctions::get();
  // Latest first, so the earliest switch's "before" is what stays.
  while (tracer.torch_state_before.size() > count) {
    StateBefore entry = std::move(tracer.torch_state_before.back());
    tracer.torch_state_before.pop_back();
    if (entry.state == TorchState::DefaultDtype) {
      check(PyObject_CallOneArg(functions.set_dtype.get(), entry.value.get()));
    } else if (entry.value.get() == Py_None) {
      check(PyObject_CallNoArgs(functions.hooks_enable.get()));
    } else {
      check(PyObject_CallOneArg(functions.hooks_disable.get(), entry.value.get()));
    }
  }
}

}  // namespace bytegraph::trace
