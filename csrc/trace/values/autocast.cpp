// torch.autocast blocks in a traced function (see autocast.h).
#include "trace/values/autocast.h"

#include "trace/plan_writer.h"
#include "trace/tracer.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

constexpr const char* kParameters[] = {"device_type", "dtype", "enabled", "cache_enabled"};

// torch.autocast's arguments bound as its __init__ binds them, defaults filled; each must be a
// constant (the graph's enter node holds them).
Args bind_arguments(const Args& args, const KwArgs& kwargs) {
  Args bound(4);
  if (args.size() > 4) raise_error("bad_call", PyExc_TypeError, "autocast() takes at most 4 arguments");
  for (size_t i = 0; i < args.size(); ++i) bound[i] = args[i];
  for (const auto& [name, value] : kwargs) {
    size_t i = 0;
    while (i < 4 && name != kParameters[i]) ++i;
    if (i == 4) raise_error("bad_call", PyExc_TypeError, "autocast() got an unexpected keyword argument '" + name + "'");
    if (bound[i]) raise_error("bad_call", PyExc_TypeError, std::string("autocast() got multiple values for argument '") + name + "'");
    bound[i] = value;
  }
  if (!bound[0]) raise_error("bad_call", PyExc_TypeError, "autocast() missing 1 required positional argument: 'device_type'");
  if (!bound[1]) bound[1] = ConstantValue::none();
  if (!bound[2]) bound[2] = make_bool(true);
  if (!bound[3]) bound[3] = ConstantValue::none();
  for (const ValuePtr& value : bound)
    if (!value->is_constant())
      unsupported("unsupported_call", "torch.autocast with " + value->repr() + ": its arguments must be constants");
  return bound;
}

py::Ref<> constants_tuple(const Args& values) {
  py::Ref<> tuple = check(PyTuple_New(static_cast<Py_ssize_t>(values.size())));
  for (size_t i = 0; i < values.size(); ++i)
    PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(i), py::Ref<>::newref(values[i]->constant()).release());
  return tuple;
}

}  // namespace

std::string AutocastValue::repr() const {
  if (is_class()) return "AutocastVariable(class)";
  return "AutocastVariable(" + py_repr(arguments_[0]->constant()) + ")";
}

PyObject* AutocastValue::python_type() const {
  const Bridge& bridge = Bridge::get();
  return is_class() ? (PyObject*)Py_TYPE(bridge.autocast_class.get()) : bridge.autocast_class.get();
}

ValuePtr AutocastValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (!is_class()) unsupported("unsupported_call", "calling a torch.autocast object (as a decorator)");
  Args bound = bind_arguments(args, kwargs);
  // Made for real now: its checks (an unknown device type, a dtype the device cannot cast to)
  // raise or warn as eager's would. Making one reads the autocast settings (a default dtype):
  // the global-state guard compares them.
  tracer.read_autocast_settings = true;
  py::Ref<> real = check(PyObject_CallObject(tracer.bridge.autocast_class.get(), constants_tuple(bound).get()));
  return std::make_shared<AutocastValue>(std::move(real), std::move(bound));
}

ValuePtr AutocastValue::get_attr(Tracer& tracer, const std::string& name) {
  if (!is_class() && (name == "device" || name == "fast_dtype" || name == "_enabled" || name == "_cache_enabled"))
    return tracer.wrap(check(PyObject_GetAttrString(real_.get(), name.c_str())).get(), nullptr);
  return Value::get_attr(tracer, name);
}

std::optional<std::pair<ValuePtr, ValuePtr>> AutocastValue::enter_with(Tracer& tracer) {
  if (is_class()) unsupported("unsupported_context", "`with` on the class torch.autocast");
  py::Ref<> arguments = constants_tuple(arguments_);
  py::Ref<> mode = check(PyObject_CallObject(tracer.bridge.enter_autocast.get(), arguments.get()));
  tracer.autocast_modes.push_back(mode.copy());
  graph::Node& node = tracer.graph.append(graph::Op::CallFunction, tracer.bridge.enter_autocast.copy(),
                                          std::move(arguments), nullptr, mode.copy(), tracer.location());
  return std::pair<ValuePtr, ValuePtr>{std::make_shared<AutocastExitValue>(node.index, std::move(mode)), shared_from_this()};
}

std::optional<codegen::OutputPlan> AutocastValue::remake(PlanWriter& writer) {
  if (is_class()) return std::nullopt;
  return writer.call(Bridge::get().autocast_class.get(), arguments_);
}

ValuePtr AutocastExitValue::call(Tracer& tracer, const Args&, const KwArgs&) {
  // __exit__(None, None, None), or with the exception leaving the block: autocast is left
  // either way, and an exception is never suppressed.
  if (exited_) unsupported("unsupported_context", "leaving a torch.autocast block twice");
  py::Ref<> args = check(PyTuple_Pack(1, tracer.graph.node(static_cast<size_t>(enter_node_)).ref.get()));
  tracer.graph.append(graph::Op::CallFunction, tracer.bridge.exit_autocast.copy(), std::move(args), nullptr,
                      py::Ref<>::newref(Py_None), tracer.location());
  auto& modes = tracer.autocast_modes;
  for (size_t i = modes.size(); i-- > 0;) {
    if (modes[i].get() != mode_.get()) continue;
    modes.erase(modes.begin() + static_cast<std::ptrdiff_t>(i));
    check(PyObject_CallOneArg(tracer.bridge.exit_autocast.get(), mode_.get()));
    break;
  }
  exited_ = true;
  return make_bool(false);
}

void exit_autocast_modes(Tracer& tracer, size_t keep) {
  auto& modes = tracer.autocast_modes;
  while (modes.size() > keep) {
    py::Ref<> mode = std::move(modes.back());
    modes.pop_back();
    auto left = py::Ref<>::steal(PyObject_CallOneArg(tracer.bridge.exit_autocast.get(), mode.get()));
    if (!left) PyErr_WriteUnraisable(mode.get());  // a rollback cannot fail halfway
  }
}

}  // namespace bytegraph::trace
