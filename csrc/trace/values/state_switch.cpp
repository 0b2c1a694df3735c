// Switches of torch's process state while tracing (see state_switch.h).
#include "trace/values/state_switch.h"

#include <algorithm>
#include <unordered_map>

#include "python/import.h"
#include "trace/tracer.h"

namespace bytegraph::trace {

namespace {

// A switch: the query whose answer it changes (what puts the state back is the switch itself,
// called with that answer).
struct Switch {
  PyObject* query;
  int arguments;  // how many the switch takes
};

struct StateFunctions {
  // torch._C._autograd's: the message while disabled (None while enabled), and the switches.
  py::Ref<> hooks_message, hooks_disable, hooks_enable;
  std::unordered_map<PyObject*, Switch> switches;  // each switch of any state, by identity
  std::vector<PyObject*> queries;                   // each state's query, once

  static const StateFunctions& get() {
    static StateFunctions* functions = [] {  // leaked: lives as long as the interpreter
      auto* f = new StateFunctions();
      py::Ref<> torch = check(PyImport_ImportModule("torch"));
      py::Ref<> torch_c = check(PyObject_GetAttrString(torch.get(), "_C"));
      py::Ref<> autograd = check(PyObject_GetAttrString(torch_c.get(), "_autograd"));
      f->hooks_message = check(PyObject_GetAttrString(autograd.get(), "_saved_tensors_hooks_get_disabled_error_message"));
      f->hooks_disable = check(PyObject_GetAttrString(autograd.get(), "_saved_tensors_hooks_disable"));
      f->hooks_enable = check(PyObject_GetAttrString(autograd.get(), "_saved_tensors_hooks_enable"));
      f->add(torch.get(), "set_default_dtype", torch.get(), "get_default_dtype");
      f->add(torch_c.get(), "_set_default_dtype", torch.get(), "get_default_dtype");
      for (const char* backend : {"flash", "mem_efficient", "math", "cudnn", "overrideable"}) {
        f->add(torch_c.get(), (std::string("_set_sdp_use_") + backend).c_str(), torch_c.get(),
               (std::string("_get_") + backend + "_sdp_enabled").c_str());
      }
      f->add(torch_c.get(), "_set_sdp_priority_order", torch_c.get(), "_get_sdp_priority_order");
      return f;
    }();
    return *functions;
  }

 private:
  // Functions a torch build lacks are left out (classification never hands them over then).
  void add(PyObject* owner, const char* name, PyObject* query_owner, const char* query) {
    if (!PyObject_HasAttrString(owner, name) || !PyObject_HasAttrString(query_owner, query)) return;
    // Both live as long as torch: held for the process.
    PyObject* function = check(PyObject_GetAttrString(owner, name)).release();
    PyObject* query_function = check(PyObject_GetAttrString(query_owner, query)).release();
    switches[function] = Switch{query_function, 1};
    if (std::find(queries.begin(), queries.end(), query_function) == queries.end()) queries.push_back(query_function);
  }
};

bool is_constant_string(const ValuePtr& value) {
  return value->is_constant() && PyUnicode_Check(value->constant());
}

// A constant, or a list of constants (a priority order).
bool is_constant_argument(const ValuePtr& value) {
  if (value->is_constant()) return true;
  auto* list = dynamic_cast<SequenceValue*>(value.get());
  return list != nullptr && list->is_list() &&
         std::all_of(list->items.begin(), list->items.end(), [](const ValuePtr& item) { return item->is_constant(); });
}

// A query's answer as a value: a list answer (the priority order) is a new list each call.
ValuePtr folded(py::Ref<> answer) {
  if (!PyList_CheckExact(answer.get())) return ConstantValue::make(std::move(answer));
  Args items;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(answer.get()); ++i)
    items.push_back(ConstantValue::make(py::Ref<>::newref(PyList_GET_ITEM(answer.get(), i))));
  return std::make_shared<SequenceValue>(true, std::move(items));
}

guards::TracedState traced_state(TorchState state) {
  return state == TorchState::SdpBackends ? guards::TracedState::SdpBackends : guards::TracedState::SavedTensorsHooks;
}

// The state before a saved-tensors-hooks switch (its message), after checking the call.
py::Ref<> saved_tensors_hooks_before(const StateFunctions& functions, PyObject* function, const Args& args,
                                     const KwArgs& kwargs) {
  const bool disable = function == functions.hooks_disable.get();
  if (!kwargs.empty() || (disable ? args.size() != 1 || !is_constant_string(args[0]) : !args.empty()))
    unsupported("unsupported_call", "a saved-tensors-hooks switch with these arguments");
  return check(PyObject_CallNoArgs(functions.hooks_message.get()));
}

}  // namespace

ValuePtr StateSwitchValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  const StateFunctions& functions = StateFunctions::get();
  if (state_ != TorchState::DefaultDtype) tracer.read_state(traced_state(state_));
  StateBefore before{state_, nullptr, nullptr};
  if (state_ == TorchState::SavedTensorsHooks && function_.get() != functions.hooks_message.get()) {
    // Put back by disabling them again with the message they had, or enabling them.
    py::Ref<> message = saved_tensors_hooks_before(functions, function_.get(), args, kwargs);
    const bool were_enabled = message.get() == Py_None;
    before.restore = (were_enabled ? functions.hooks_enable : functions.hooks_disable).copy();
    if (!were_enabled) before.value = std::move(message);
  } else if (auto found = functions.switches.find(function_.get()); found != functions.switches.end()) {
    if (static_cast<int>(args.size()) != found->second.arguments || !kwargs.empty() || !is_constant_argument(args[0]))
      unsupported("unsupported_call", "a switch of torch's state with these arguments (constants expected)");
    before.restore = py::Ref<>::newref(function_.get());
    before.value = check(PyObject_CallNoArgs(found->second.query));
  } else {  // a query: the state's value now, as the call would answer it
    if (!args.empty() || !kwargs.empty()) unsupported("unsupported_call", "a query of torch's state with arguments");
    return folded(check(PyObject_CallNoArgs(function_.get())));
  }
  // Recording runs it on constants, which is the real call (it raises where torch refuses,
  // which the trace reports as the program's error).
  ValuePtr result = tracer.record(graph::Op::CallFunction, function_.copy(), args, {});
  tracer.torch_state_before.push_back(std::move(before));
  return result;
}

void record_state_restore(Tracer& tracer, const StateBefore& before) {
  Args args;
  if (before.value) args.push_back(ConstantValue::make(before.value.copy()));
  StateSwitchValue(before.state, before.restore.copy(), nullptr).call(tracer, args, {});
}

py::Ref<> torch_state_now(const Tracer& tracer) {
  const StateFunctions& functions = StateFunctions::get();
  py::Ref<> state = check(PyList_New(0));
  check_status(PyList_Append(state.get(), check(PyObject_CallNoArgs(tracer.bridge.is_grad_enabled.get())).get()));
  check_status(PyList_Append(state.get(), check(PyObject_CallNoArgs(functions.hooks_message.get())).get()));
  for (PyObject* query : functions.queries)
    check_status(PyList_Append(state.get(), check(PyObject_CallNoArgs(query)).get()));
  return state;
}

void restore_torch_state(Tracer& tracer, size_t count) {
  // Latest first, so the earliest switch's "before" is what stays.
  while (tracer.torch_state_before.size() > count) {
    StateBefore entry = std::move(tracer.torch_state_before.back());
    tracer.torch_state_before.pop_back();
    check(entry.value ? PyObject_CallOneArg(entry.restore.get(), entry.value.get()) : PyObject_CallNoArgs(entry.restore.get()));
  }
}

}  // namespace bytegraph::trace
