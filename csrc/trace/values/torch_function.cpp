// __torch_function__ dispatch while tracing (see torch_function.h).
#include "trace/values/torch_function.h"

#include "guards/leaf_guard.h"
#include "python/import.h"
#include "trace/tracer.h"

namespace bytegraph::trace {

namespace {

// What the dispatch needs from bytegraph/_torch_function.py, looked up once per process.
struct TorchFunctionBridge {
  py::Ref<> dispatches, runs_with_op, dispatched_callable, leaves_unconverted, default_function, parameter_type;

  static const TorchFunctionBridge& get() {
    static TorchFunctionBridge* bridge = [] {  // leaked: lives as long as the interpreter
      auto* b = new TorchFunctionBridge();
      py::Ref<> module = check(PyImport_ImportModule("bytegraph._torch_function"));
      b->dispatches = check(PyObject_GetAttrString(module.get(), "dispatches"));
      b->runs_with_op = check(PyObject_GetAttrString(module.get(), "runs_with_op"));
      b->dispatched_callable = check(PyObject_GetAttrString(module.get(), "dispatched_callable"));
      b->leaves_unconverted = check(PyObject_GetAttrString(module.get(), "leaves_unconverted"));
      b->default_function = check(PyObject_GetAttrString(module.get(), "DEFAULT"));
      b->parameter_type = check(PyObject_GetAttrString(module.get(), "PARAMETER"));
      return b;
    }();
    return *bridge;
  }
};

bool ask(const py::Ref<>& function, PyObject* argument) {
  py::Ref<> answer = check(PyObject_CallOneArg(function.get(), argument));
  return PyObject_IsTrue(answer.get()) == 1;
}

bool is_subclass(PyObject* cls, PyObject* base) {
  int result = PyObject_IsSubclass(cls, base);
  check_status(result);
  return result == 1;
}

bool is_torch_class(PyObject* cls) {
  // torch.Tensor and nn.Parameter: their overrides (none, and the disabled one) are torch's own.
  return cls == Bridge::get().tensor_type.get() || cls == TorchFunctionBridge::get().parameter_type.get();
}

// The function behind `cls.__torch_function__` (borrowed: the class keeps it), guarded where
// the class holds it: an override added, replaced or removed after compiling recompiles.
PyObject* guarded_override(Tracer& tracer, PyObject* cls) {
  py::Ref<> handler = check(PyObject_GetAttrString(cls, "__torch_function__"));
  guards::SourcePtr source = guards::class_attr_source(cls, "__torch_function__");
  PyObject* function = handler.get();
  if (PyMethod_Check(function)) {  // a classmethod, bound anew on each read
    function = PyMethod_GET_FUNCTION(function);
    source = guards::attr_source(source, "__func__");
  }
  if (!is_torch_class(cls)) tracer.guards.add(GuardLog::Kind::Id, source, function);
  return function;  // alive: a classmethod's function is held by the classmethod on the class
}

// An op whose override runs with it (a NestedTensor's) needs the graph to run with subclass
// dispatch on, which a graph holding overrides the trace modelled cannot: such a mix, or such
// an op inside an override (dispatch off), runs eagerly.
void keep_dispatch_on(Tracer& tracer, PyObject* cls) {
  if (tracer.torch_function_inlined || !tracer.torch_function_subclass_enabled)
    unsupported("unsupported_call", std::string("an op on a ") + ((PyTypeObject*)cls)->tp_name +
                                        " (whose __torch_function__ runs with the op) in a graph that runs "
                                        "with subclass dispatch off (another subclass's override traced, or "
                                        "a DisableTorchFunctionSubclass block)");
  tracer.override_runs_with_op = true;
}

// The trace models __torch_function__ dispatch from now on: its graph runs with subclass
// dispatch off.
void model_dispatch(Tracer& tracer) {
  if (tracer.override_runs_with_op)
    unsupported("unsupported_call", "a tensor subclass's __torch_function__ traced in a graph that also holds "
                                    "an op whose override runs with it (a NestedTensor's)");
  tracer.torch_function_inlined = true;
}

// Adds the class of each dispatching tensor in `value` (looking inside lists and tuples, as
// torch's argument parser does), a subclass before any of its bases.
void collect_overloaded(Tracer& tracer, const ValuePtr& value, std::vector<PyObject*>& types) {
  if (auto* sequence = dynamic_cast<SequenceValue*>(value.get())) {
    for (const ValuePtr& item : sequence->items) collect_overloaded(tracer, item, types);
    return;
  }
  if (!value->is_tensor()) return;
  PyObject* cls = value->python_type();
  if (is_torch_class(cls)) return;
  for (PyObject* known : types)
    if (known == cls) return;
  if (!ask(TorchFunctionBridge::get().dispatches, cls)) {
    guarded_override(tracer, cls);  // that it still does not
    if (ask(TorchFunctionBridge::get().runs_with_op, cls)) keep_dispatch_on(tracer, cls);
    return;
  }
  for (auto it = types.begin(); it != types.end(); ++it) {
    if (is_subclass(cls, *it)) {
      types.insert(it, cls);
      return;
    }
  }
  types.push_back(cls);
}

ValuePtr class_value(Tracer& tracer, PyObject* cls) { return tracer.wrap(cls, guards::class_source(cls)); }

ValuePtr types_value(Tracer& tracer, const std::vector<PyObject*>& types) {
  Args items;
  for (PyObject* cls : types) items.push_back(class_value(tracer, cls));
  return std::make_shared<SequenceValue>(false, std::move(items));
}

ValuePtr kwargs_value(const KwArgs& kwargs) {
  auto dict = std::make_shared<DictValue>();
  for (const auto& [name, value] : kwargs) dict->set_item(check(PyUnicode_FromString(name.c_str())).get(), value);
  return dict;
}

ValuePtr retyped(const TensorValue& tensor, PyObject* cls) {
  auto converted = std::make_shared<TensorValue>(tensor.node(), py::Ref<>::newref(tensor.fake()));
  converted->target = tensor.target.copy();
  converted->display_name = tensor.display_name;
  if (cls != Bridge::get().tensor_type.get()) converted->set_python_type(cls);
  return converted;
}

// `ret.as_subclass(cls)` for each tensor of `result` not already a `cls` (torch's _convert).
ValuePtr convert(const ValuePtr& result, PyObject* cls) {
  if (auto* tensor = dynamic_cast<TensorValue*>(result.get()))
    return is_subclass(tensor->python_type(), cls) ? result : retyped(*tensor, cls);
  if (auto* sequence = dynamic_cast<SequenceValue*>(result.get())) {
    if (!sequence->mutable_here() && sequence->source()) return result;
    Args items;
    for (const ValuePtr& item : sequence->items) items.push_back(convert(item, cls));
    auto converted = std::make_shared<SequenceValue>(sequence->is_list(), std::move(items));
    converted->tuple_type = sequence->tuple_type.copy();
    return converted;
  }
  return result;
}

// The object a constant, a class or a callable the trace holds stands for (borrowed), or null.
PyObject* object_of(const ValuePtr& value) { return value->is_constant() ? value->constant() : value->real_object(); }

bool not_implemented(const ValuePtr& value) { return value->is_constant() && value->constant() == Py_NotImplemented; }

// torch.Tensor.__torch_function__(cls, func, types, args, kwargs), with func already a value.
ValuePtr run_default(Tracer& tracer, PyObject* cls, const ValuePtr& func, const Args& types, const Args& args,
                     const KwArgs& kwargs) {
  for (const ValuePtr& type : types) {
    PyObject* real = object_of(type);
    if (real == nullptr) unsupported("unsupported_call", "torch.Tensor.__torch_function__ given the type " + type->repr());
    if (!is_subclass(cls, real)) return ConstantValue::make(py::Ref<>::newref(Py_NotImplemented));
  }
  ValuePtr result;
  {
    TorchFunctionSubclassOff off(tracer);
    result = func->call(tracer, args, kwargs);
  }
  PyObject* callable = object_of(func);
  if (callable != nullptr && ask(TorchFunctionBridge::get().leaves_unconverted, callable)) return result;
  return convert(result, cls);
}

// The block's __exit__: dispatch back as it was. Planned as a grad-mode exit that cannot be
// re-entered (plan_writer): a break inside the block does not split the frame.
class SubclassDispatchExitValue : public GradModeExitValue {
 public:
  SubclassDispatchExitValue(bool grad_mode, bool dispatch_before)
      : GradModeExitValue(grad_mode), dispatch_before_(dispatch_before) {}
  std::string repr() const override { return "SubclassDispatchExit"; }
  ValuePtr call(Tracer& tracer, const Args&, const KwArgs&) override {
    tracer.torch_function_subclass_enabled = dispatch_before_;
    return make_bool(false);
  }
  bool re_enterable(Tracer&) const override { return false; }

 private:
  bool dispatch_before_;
};

}  // namespace

ValuePtr SubclassDispatchSwitchValue::call(Tracer&, const Args& args, const KwArgs& kwargs) {
  if (!is_class_ || !args.empty() || !kwargs.empty()) unsupported("unsupported_call", "calling " + repr() + " with arguments");
  return std::make_shared<SubclassDispatchSwitchValue>(cls_.copy(), false);
}

std::optional<std::pair<ValuePtr, ValuePtr>> SubclassDispatchSwitchValue::enter_with(Tracer& tracer) {
  if (is_class_) unsupported("unsupported_context", "`with` on the class " + repr());
  auto exit = std::make_shared<SubclassDispatchExitValue>(guards::grad_mode_enabled_now(),
                                                          tracer.torch_function_subclass_enabled);
  tracer.torch_function_subclass_enabled = false;
  return std::pair<ValuePtr, ValuePtr>{exit, shared_from_this()};
}

void note_real_tensor(Tracer& tracer, PyObject* tensor) {
  PyObject* cls = (PyObject*)Py_TYPE(tensor);
  if (is_torch_class(cls)) return;
  guarded_override(tracer, cls);  // the trace models (or skips) dispatch for the override it has now
  if (ask(TorchFunctionBridge::get().dispatches, cls)) model_dispatch(tracer);
}

ValuePtr as_subclass(Tracer& tracer, const ValuePtr& tensor, const ValuePtr& cls) {
  PyObject* real = object_of(cls);
  auto* value = dynamic_cast<TensorValue*>(tensor.get());
  if (value == nullptr || real == nullptr || !PyType_Check(real) || !is_subclass(real, Bridge::get().tensor_type.get()))
    unsupported("unsupported_call", "Tensor.as_subclass(" + cls->repr() + ")");
  if (real != Bridge::get().tensor_type.get() && ask(TorchFunctionBridge::get().dispatches, real))
    model_dispatch(tracer);
  return retyped(*value, real);
}

bool is_default_torch_function(PyObject* function) {
  return function == TorchFunctionBridge::get().default_function.get();
}

TorchFunctionSubclassOff::TorchFunctionSubclassOff(Tracer& tracer)
    : tracer_(tracer), before_(tracer.torch_function_subclass_enabled) {
  tracer.torch_function_subclass_enabled = false;
}

TorchFunctionSubclassOff::~TorchFunctionSubclassOff() { tracer_.torch_function_subclass_enabled = before_; }

namespace {

// Each override in turn (subclasses first) until one answers; `func` is what they are handed.
ValuePtr dispatch_to_overrides(Tracer& tracer, const std::vector<PyObject*>& types, const ValuePtr& func,
                               PyObject* func_object, const Args& args, const KwArgs& kwargs) {
  model_dispatch(tracer);
  ValuePtr types_tuple = types_value(tracer, types);
  for (PyObject* cls : types) {
    ValuePtr result;
    PyObject* override = guarded_override(tracer, cls);
    if (is_default_torch_function(override)) {
      result = run_default(tracer, cls, func, *types_tuple->unpack(tracer), args, kwargs);
    } else {
      // Only an override written in Python is inlined; anything else would be recorded as a
      // call of the override itself.
      if (!PyFunction_Check(override))
        unsupported("unsupported_call", "the __torch_function__ of " + py_repr(cls) + " is not a Python classmethod (" +
                                            py_repr(override) + ")");
      ValuePtr handler = class_value(tracer, cls)->get_attr(tracer, "__torch_function__");
      TorchFunctionSubclassOff off(tracer);
      result = handler->call(tracer, {func, types_tuple, std::make_shared<SequenceValue>(false, args), kwargs_value(kwargs)}, {});
    }
    if (!not_implemented(result)) return result;
  }
  unsupported("unsupported_call", "every __torch_function__ override answered NotImplemented for " + py_repr(func_object));
}

// torch.Tensor.<name>.__get__, what eager hands an override for reading attribute `name`:
// called on a tensor it reads the attribute (with dispatch off, inside the default override).
class AttributeGetterValue : public Value {
 public:
  AttributeGetterValue(std::string name, py::Ref<> getter, ValuePtr held)
      : name_(std::move(name)), getter_(std::move(getter)), held_(std::move(held)) {}
  std::string repr() const override { return "TensorAttributeGetter(" + name_ + ")"; }
  PyObject* real_object() const override { return getter_.get(); }
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(getter_.get()); }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override { return held_->get_attr(tracer, name); }
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override { return held_->remake(writer); }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    if (args.size() != 1 || !kwargs.empty() || !args[0]->is_tensor())
      unsupported("unsupported_call", "torch.Tensor." + name_ + ".__get__ with these arguments");
    return args[0]->get_attr(tracer, name_);
  }

 private:
  std::string name_;
  py::Ref<> getter_;
  ValuePtr held_;  // the getter as an object the trace holds (its attributes, rebuilding it)
};

}  // namespace

ValuePtr dispatch_torch_function(Tracer& tracer, graph::Op op, PyObject* target, const Args& args,
                                 const KwArgs& kwargs) {
  if (!tracer.torch_function_subclass_enabled) {
    std::vector<PyObject*> ignored;  // only to refuse an op whose override would run with it
    for (const ValuePtr& arg : args) collect_overloaded(tracer, arg, ignored);
    for (const auto& [name, value] : kwargs) collect_overloaded(tracer, value, ignored);
    return nullptr;
  }
  if (op != graph::Op::CallFunction && op != graph::Op::CallMethod) return nullptr;
  std::vector<PyObject*> types;
  for (const ValuePtr& arg : args) collect_overloaded(tracer, arg, types);
  for (const auto& [name, value] : kwargs) collect_overloaded(tracer, value, types);
  if (types.empty()) return nullptr;
  const TorchFunctionBridge& bridge = TorchFunctionBridge::get();
  py::Ref<> kind = check(PyUnicode_FromString(graph::op_name(op)));
  py::Ref<> first_is_tensor = py::Ref<>::newref(!args.empty() && args[0]->is_tensor() ? Py_True : Py_False);
  py::Ref<> func_object = check(PyObject_CallFunctionObjArgs(bridge.dispatched_callable.get(), kind.get(), target,
                                                             first_is_tensor.get(), nullptr));
  // Held by the trace, so generated code can hand it on (an override that stores func).
  ValuePtr func = tracer.wrap(func_object.get(), guards::held_source(func_object.copy(), py_repr(func_object.get())));
  return dispatch_to_overrides(tracer, types, func, func_object.get(), args, kwargs);
}

ValuePtr dispatch_attribute_read(Tracer& tracer, const ValuePtr& tensor, const std::string& name) {
  if (!tracer.torch_function_subclass_enabled) return nullptr;
  std::vector<PyObject*> types;
  collect_overloaded(tracer, tensor, types);
  if (types.empty()) return nullptr;
  // Only the attributes torch defines in C (getset descriptors) dispatch; a subclass's own
  // attributes, and methods (dispatched when called), do not.
  py::Ref<> key = check(PyUnicode_FromString(name.c_str()));
  PyObject* tensor_type = Bridge::get().tensor_type.get();
  PyObject* descriptor = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(tensor_type), key.get());  // borrowed
  if (descriptor == nullptr || !Py_IS_TYPE(descriptor, &PyGetSetDescr_Type)) return nullptr;
  static PyObject* tensor_base = check(PyObject_GetAttrString(import_module("torch._C").get(), "TensorBase")).release();
  if (reinterpret_cast<PyObject*>(PyDescr_TYPE(descriptor)) != tensor_base) return nullptr;  // object's __class__, ...
  PyObject* own = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(tensor->python_type()), key.get());
  if (own != descriptor) return nullptr;  // the subclass defines it: read as Python reads it
  py::Ref<> getter = check(PyObject_GetAttrString(descriptor, "__get__"));
  ValuePtr held = tracer.wrap(getter.get(), guards::held_source(getter.copy(), "torch.Tensor." + name + ".__get__"));
  auto func = std::make_shared<AttributeGetterValue>(name, getter.copy(), held);
  return dispatch_to_overrides(tracer, types, func, getter.get(), {tensor}, {});
}

ValuePtr DefaultTorchFunctionValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  // (cls, func, types, args=(), kwargs=None), as torch.Tensor.__torch_function__ takes them.
  Args all = args;
  for (const auto& [name, value] : kwargs) {
    size_t position = name == "cls" ? 0 : name == "func" ? 1 : name == "types" ? 2 : name == "args" ? 3 : name == "kwargs" ? 4 : 5;
    if (position == 5 || position < all.size()) unsupported("unsupported_call", "torch.Tensor.__torch_function__ given " + name);
    all.resize(position + 1);
    all[position] = value;
  }
  if (all.size() < 3 || all.size() > 5 || !all[0] || !all[1] || !all[2] || !object_of(all[0]) || !PyType_Check(object_of(all[0])))
    unsupported("unsupported_call", "torch.Tensor.__torch_function__ with these arguments");
  PyObject* cls = object_of(all[0]);
  std::optional<Args> types = all[2]->unpack(tracer);
  std::optional<Args> positional = all.size() > 3 && all[3] ? all[3]->unpack(tracer) : Args{};
  if (!types || !positional) unsupported("unsupported_call", "torch.Tensor.__torch_function__ with these arguments");
  KwArgs keywords;
  if (all.size() > 4 && all[4] && !(all[4]->is_constant() && all[4]->constant() == Py_None)) {
    auto* dict = dynamic_cast<DictValue*>(all[4].get());
    if (dict == nullptr) unsupported("unsupported_call", "torch.Tensor.__torch_function__ with kwargs " + all[4]->repr());
    for (size_t i = 0; i < dict->keys.size(); ++i) {
      if (!PyUnicode_Check(dict->keys[i].get())) unsupported("unsupported_call", "a keyword that is not a string");
      keywords.emplace_back(PyUnicode_AsUTF8(dict->keys[i].get()), dict->values[i]);
    }
  }
  return run_default(tracer, cls, all[1], *types, *positional, keywords);
}

}  // namespace bytegraph::trace
