// Grad-mode context managers: `with torch.no_grad():` inside a traced function.
#include "guards/leaf_guard.h"
#include "trace/plan_writer.h"
#include "trace/tracer.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

// Records torch._C._set_grad_enabled(enabled); running it on fakes switches the real mode,
// so the ops recorded after it see the same mode they will run under.
// `coalesce`: the switch of a grad-mode block (torch.no_grad() and friends) to the mode already
// on changes nothing and is left out, as torch.compile leaves it out (the mode at each point of
// the trace is the one at run time: the global-state guard pins it at entry). A direct
// torch._C._set_grad_enabled call is recorded as it is.
void record_set_grad_enabled(Tracer& tracer, bool enabled, bool coalesce) {
  py::Ref<> before = check(PyObject_CallNoArgs(tracer.bridge.is_grad_enabled.get()));
  if (coalesce && (before.get() == Py_True) == enabled) return;
  tracer.grad_modes_before.push_back(before.get() == Py_True);
  ValuePtr flag = ConstantValue::make(py::Ref<>::newref(enabled ? Py_True : Py_False));
  tracer.record(graph::Op::CallFunction, tracer.bridge.set_grad_enabled.copy(), {flag}, {});
}

namespace {

// torch.enable_grad or torch.no_grad (borrowed, kept by the bridge).
PyObject* grad_mode_class(bool enabled) {
  const Bridge& bridge = Bridge::get();
  return enabled ? bridge.enable_grad.get() : bridge.no_grad.get();
}

// A function decorated by a grad mode (`torch.no_grad()(f)`, `torch.enable_grad(f)`): a call
// switches the mode, runs the function inlined and restores the mode, however it leaves.
class GradModeFunctionValue : public Value {
 public:
  GradModeFunctionValue(bool enabled, ValuePtr function) : enabled_(enabled), function_(std::move(function)) {}
  std::string repr() const override {
    return std::string(enabled_ ? "enable_grad" : "no_grad") + "(" + function_->repr() + ")";
  }
  PyObject* python_type() const override { return (PyObject*)&PyFunction_Type; }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    const bool previous = guards::grad_mode_enabled_now();
    record_set_grad_enabled(tracer, enabled_);
    ValuePtr result;
    try {
      result = function_->call(tracer, args, kwargs);
    } catch (const Raised&) {
      record_set_grad_enabled(tracer, previous);
      throw;
    }
    record_set_grad_enabled(tracer, previous);
    // torch wraps a generator function so that each resumption runs under the mode.
    if (result->python_type() == (PyObject*)&PyGen_Type)
      unsupported("unsupported_call", "a generator function decorated by " + repr());
    return result;
  }
  // The class decorating the function made again: torch.no_grad(function).
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override {
    return writer.call(grad_mode_class(enabled_), {function_});
  }

 private:
  bool enabled_;
  ValuePtr function_;
};

// made_set_grad_enabled(mode, prev) -> a torch.set_grad_enabled object as making one with the
// mode `prev` on leaves it, without switching the mode again (the graph switched it).
PyObject* made_set_grad_enabled(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "made_set_grad_enabled(mode, prev)");
    return nullptr;
  }
  auto torch = py::Ref<>::steal(PyImport_ImportModule("torch"));
  auto cls = torch ? py::Ref<>::steal(PyObject_GetAttrString(torch.get(), "set_grad_enabled")) : py::Ref<>();
  auto no_args = cls ? py::Ref<>::steal(PyTuple_New(0)) : py::Ref<>();
  auto made = no_args ? py::Ref<>::steal(PyBaseObject_Type.tp_new(reinterpret_cast<PyTypeObject*>(cls.get()), no_args.get(), nullptr))
                      : py::Ref<>();
  if (!made || PyObject_SetAttrString(made.get(), "mode", args[0]) < 0 || PyObject_SetAttrString(made.get(), "prev", args[1]) < 0)
    return nullptr;
  return made.release();
}

PyObject* made_set_grad_enabled_function() {
  static PyMethodDef definition = {"made_set_grad_enabled",
                                   reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(made_set_grad_enabled)),
                                   METH_FASTCALL, "A torch.set_grad_enabled object made with another mode on."};
  static PyObject* function = check(PyCFunction_New(&definition, nullptr)).release();  // kept for the process
  return function;
}

bool is_function_like(const ValuePtr& value) {
  return dynamic_cast<UserFunctionValue*>(value.get()) || dynamic_cast<BoundMethodValue*>(value.get()) ||
         dynamic_cast<GradModeFunctionValue*>(value.get());
}

}  // namespace

std::string GradModeValue::repr() const {
  if (switch_when_made_)
    return is_class_ ? "GradModeVariable(set_grad_enabled, class)"
                     : std::string("GradModeVariable(set_grad_enabled(") + (enabled_ ? "True" : "False") + "))";
  return std::string("GradModeVariable(") + (enabled_ ? "enable_grad" : "no_grad") + (is_class_ ? ", class" : "") + ")";
}

ValuePtr GradModeValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (switch_when_made_ && is_class_) {
    // torch.set_grad_enabled(mode): the mode switches now, whether or not a block follows.
    ValuePtr mode = args.size() == 1 && kwargs.empty() ? args[0] : (args.empty() && kwargs.size() == 1 && kwargs[0].first == "mode" ? kwargs[0].second : nullptr);
    if (!mode || !mode->is_constant() || !PyBool_Check(mode->constant()))
      unsupported("unsupported_call", "torch.set_grad_enabled with " + (mode ? mode->repr() : std::string("these arguments")) + ": the mode must be a constant bool");
    auto made = std::make_shared<GradModeValue>(mode->constant() == Py_True, false, nullptr, true);
    made->before_made_ = guards::grad_mode_enabled_now();
    record_set_grad_enabled(tracer, made->enabled_);
    return made;
  }
  // As a decorator: torch.no_grad()(f), or the class given the function, torch.no_grad(f).
  if (args.size() == 1 && kwargs.empty() && is_function_like(args[0])) {
    // torch.set_grad_enabled(mode)(f) puts back the mode its making switched.
    if (switch_when_made_) record_set_grad_enabled(tracer, before_made_);
    return std::make_shared<GradModeFunctionValue>(enabled_, args[0]);
  }
  if (!is_class_ || switch_when_made_ || !args.empty() || !kwargs.empty()) unsupported("unsupported_call", "calling " + repr());
  return std::make_shared<GradModeValue>(enabled_, false);
}

// A grad-mode object alive at a break (`ctx = torch.no_grad()`, entered after it).
std::optional<codegen::OutputPlan> GradModeValue::remake(PlanWriter& writer) {
  if (is_class_) return std::nullopt;
  if (switch_when_made_)
    return writer.call(made_set_grad_enabled_function(), {make_bool(enabled_), make_bool(before_made_)});
  return writer.call(grad_mode_class(enabled_), {});
}

std::optional<std::pair<ValuePtr, ValuePtr>> GradModeValue::enter_with(Tracer& tracer) {
  if (is_class_) unsupported("unsupported_context", "`with` on the class " + repr());
  if (switch_when_made_)  // switched when made
    return std::pair<ValuePtr, ValuePtr>{std::make_shared<GradModeExitValue>(before_made_), ConstantValue::none()};
  bool previous = guards::grad_mode_enabled_now();
  record_set_grad_enabled(tracer, enabled_);
  return std::pair<ValuePtr, ValuePtr>{std::make_shared<GradModeExitValue>(previous), ConstantValue::none()};
}

ValuePtr GradModeExitValue::call(Tracer& tracer, const Args&, const KwArgs&) {
  // __exit__(None, None, None), or with the exception leaving the block: the mode is restored
  // either way, and an exception is never suppressed.
  record_set_grad_enabled(tracer, previous_);
  return ConstantValue::make(py::Ref<>::newref(Py_False));
}

ValuePtr SetGradEnabledValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (args.size() != 1 || !kwargs.empty())
    raise_error("bad_call", PyExc_TypeError, "_set_grad_enabled() takes exactly one argument");
  if (!args[0]->is_constant() || !PyBool_Check(args[0]->constant()))
    unsupported("unsupported_call", "torch._C._set_grad_enabled(" + args[0]->repr() + "): the mode must be a constant bool");
  record_set_grad_enabled(tracer, args[0]->constant() == Py_True, /*coalesce=*/false);
  return ConstantValue::none();
}

std::optional<codegen::OutputPlan> GradModeExitValue::remake(PlanWriter& writer) {
  if (!re_enterable(writer.tracer())) throw NotRestorable{repr() + " (its block cannot be entered again at this point)"};
  codegen::OutputPlan plan;
  plan.kind = codegen::OutputPlan::Kind::GradModeExit;
  plan.constant = py::Ref<>::newref(previous_ ? Py_True : Py_False);
  return plan;
}

}  // namespace bytegraph::trace
