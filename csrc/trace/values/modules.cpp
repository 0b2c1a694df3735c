// nn.Module instances and Python modules.
#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "guards/tensor_meta.h"
#include "trace/tracer.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

// torch.nn's hooks on every module's call (register_module_forward_hook and friends): the
// dicts themselves, which registering fills in place.
const std::vector<std::pair<std::string, py::Ref<>>>& global_hook_dicts() {
  static const auto* dicts = [] {
    auto* found = new std::vector<std::pair<std::string, py::Ref<>>>();  // kept for the process
    py::Ref<> module = check(PyImport_ImportModule("torch.nn.modules.module"));
    for (const char* name : {"_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_pre_hooks",
                             "_global_backward_hooks"})
      found->emplace_back(std::string("torch.nn.modules.module.") + name, check(PyObject_GetAttrString(module.get(), name)));
    return found;
  }();
  return *dicts;
}

bool any_hooks(PyObject* module, bool backward_only) {
  for (const auto& [name, hooks] : global_hook_dicts())
    if ((!backward_only || name.find("backward") != std::string::npos) && PyObject_Size(hooks.get()) > 0) return true;
  static const char* all_names[] = {"_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"};
  static const char* backward_names[] = {"_backward_hooks", "_backward_pre_hooks"};
  for (const char* name : backward_only ? std::span<const char* const>(backward_names) : std::span<const char* const>(all_names)) {
    py::Ref<> hooks = py::Ref<>::steal(PyObject_GetAttrString(module, name));
    if (!hooks) {
      PyErr_Clear();
      continue;
    }
    Py_ssize_t size = PyObject_Size(hooks.get());
    if (size < 0) PyErr_Clear();
    if (size > 0) return true;
  }
  return false;
}

bool has_hooks(PyObject* module) { return any_hooks(module, false); }
// Backward hooks wrap the inputs and outputs in BackwardHook nodes the trace cannot make.
bool has_backward_hooks(PyObject* module) { return any_hooks(module, true); }

bool in_instance_state(PyObject* module, const std::string& name) {
  static const char* dicts[] = {"_parameters", "_buffers", "_modules"};
  for (const char* dict_name : dicts) {
    py::Ref<> dict = py::Ref<>::steal(PyObject_GetAttrString(module, dict_name));
    if (!dict) {
      PyErr_Clear();
      continue;
    }
    if (PyDict_Check(dict.get()) && PyDict_GetItemString(dict.get(), name.c_str())) return true;
  }
  return false;
}

}  // namespace

std::string ModuleValue::repr() const {
  return std::string(leaf_ ? "NNModuleVariable(" : "UnspecializedNNModuleVariable(") +
         Py_TYPE(module_.get())->tp_name + (source() ? ", " + source()->repr() : std::string()) + ")";
}

ValuePtr ModuleValue::get_attr(Tracer& tracer, const std::string& name) {
  for (const auto& [attr, value] : attrs)
    if (attr == name) return value;  // written earlier in the trace
  // A property computes from the instance's state: run its getter on this module, so what it
  // reads is guarded where it comes from.
  py::Ref<> key = check(PyUnicode_FromString(name.c_str()));
  PyObject* on_class = _PyType_Lookup(Py_TYPE(module_.get()), key.get());  // borrowed
  PyObject* type = (PyObject*)Py_TYPE(module_.get());
  if (on_class && PyObject_TypeCheck(on_class, &PyProperty_Type)) {
    py::Ref<> getter = check(PyObject_GetAttrString(on_class, "fget"));
    if (!PyFunction_Check(getter.get())) unsupported("unsupported_attribute", repr() + "." + name + " is a property without a Python getter");
    guards::SourcePtr getter_source = guards::attr_source(guards::class_attr_source(type, name), "fget");
    return tracer.wrap_user_function(getter.get(), getter_source)->call(tracer, {shared_from_this()}, {});
  }
  PyObject* attribute = PyObject_GetAttrString(module_.get(), name.c_str());
  if (attribute == nullptr) {
    bool missing = PyErr_ExceptionMatches(PyExc_AttributeError);
    PythonError error = PythonError::fetch();
    if (missing && source()) {
      // Absent now; valid while no attribute of that name is set on the module or its class,
      // and none is registered in the tables torch.nn's __getattr__ reads (a buffer, a
      // parameter or a submodule registered later).
      tracer.guards.add(GuardLog::Kind::LacksKey, guards::instance_dict_of(source()), key.get());
      tracer.guards.add(GuardLog::Kind::LacksAttr, guards::class_source((PyObject*)Py_TYPE(module_.get())), key.get());
      for (const char* table : {"_parameters", "_buffers", "_modules"}) {
        py::Ref<> dict = py::Ref<>::steal(PyObject_GetAttrString(module_.get(), table));
        if (dict && PyDict_Check(dict.get()))
          tracer.guards.add(GuardLog::Kind::LacksKey, guards::instance_dict_source(source(), table), key.get());
        else
          PyErr_Clear();
      }
      // A __getattr__ of the module's own class decides what else exists: traced, so what it
      // reads is guarded where it comes from.
      static PyObject* getattr_name = PyUnicode_InternFromString("__getattr__");
      PyObject* getattr_hook = _PyType_Lookup(Py_TYPE(module_.get()), getattr_name);  // borrowed
      PyObject* torch_getattr = PyDict_GetItemWithError(
          reinterpret_cast<PyTypeObject*>(tracer.bridge.module_type.get())->tp_dict, getattr_name);  // borrowed
      if (getattr_hook != nullptr && getattr_hook != torch_getattr && PyFunction_Check(getattr_hook)) {
        return tracer.wrap_user_function(getattr_hook, guards::class_attr_source(type, "__getattr__"))
            ->call(tracer, {shared_from_this(), ConstantValue::make(py::Ref<>::newref(key.get()))}, {});
      }
      raise_python_error(tracer, error, "attribute_error");
    }
    unsupported("unsupported_attribute", error.what());
  }
  py::Ref<> real = py::Ref<>::steal(attribute);
  guards::SourcePtr attr_source = source() ? guards::attr_source(source(), name) : nullptr;
  py::Ref<> own_dict = check(PyObject_GenericGetDict(module_.get(), nullptr));
  bool data_descriptor = on_class && Py_TYPE(on_class)->tp_descr_set;
  if (PyObject* own = PyDict_GetItemString(own_dict.get(), name.c_str()); own && !data_descriptor && source()) {
    // Set on the instance (a method or function assigned there, shadowing the class's; a
    // plain tensor attribute): read from its dict.
    ValuePtr value = tracer.wrap(own, guards::instance_dict_source(source(), name));
    if (value->is_tensor()) tracer.mark_static_input(own);
    return value;
  }
  if (PyMethod_Check(real.get()) && PyMethod_GET_SELF(real.get()) == module_.get()) {
    // A method: inline the class's function with this module as self, guarded where the
    // class holds it; valid while the instance does not shadow it.
    PyObject* function = PyMethod_GET_FUNCTION(real.get());
    if (!PyFunction_Check(function)) unsupported("unsupported_attribute", repr() + "." + name + " is not a Python method");
    if (source()) tracer.guards.add(GuardLog::Kind::LacksKey, guards::instance_dict_of(source()), key.get());
    guards::SourcePtr method = guards::class_attr_source(type, name);
    return std::make_shared<BoundMethodValue>(tracer.wrap_user_function(function, method), shared_from_this());
  }
  if (PyObject_TypeCheck(real.get(), (PyTypeObject*)tracer.bridge.tensor_type.get())) {
    if (!attr_source) unsupported("untracked_tensor", "a tensor attribute of a module with no source");
    if (!pinned_) {
      ValuePtr value = tracer.wrap(real.get(), attr_source);
      tracer.mark_static_input(real.get());
      return value;
    }
    return tracer.wrap_module_tensor(real.get(), attr_source);
  }
  if (!in_instance_state(module_.get(), name)) {
    py::Ref<> dict = check(PyObject_GenericGetDict(module_.get(), nullptr));
    if (!PyDict_GetItemString(dict.get(), name.c_str())) {
      if (name == "__class__") return tracer.wrap(real.get(), source() ? guards::type_source(source()) : nullptr);
      // A class attribute, guarded where the class holds it, valid while the instance does
      // not shadow it. A descriptor's result (a property) is not what the class holds: it is
      // read again.
      if (_PyType_Lookup(Py_TYPE(module_.get()), key.get()) == real.get()) {
        if (source()) tracer.guards.add(GuardLog::Kind::LacksKey, guards::instance_dict_of(source()), key.get());
        return tracer.wrap(real.get(), guards::class_attr_source(type, name));
      }
    }
  }
  return tracer.wrap(real.get(), attr_source);
}

void ModuleValue::set_attr(Tracer& tracer, const std::string& name, const ValuePtr& value) {
  static const char* tables[] = {"_parameters", "_modules"};
  for (const char* table : tables) {
    py::Ref<> dict = check(PyObject_GetAttrString(module_.get(), table));
    if (PyDict_Check(dict.get()) && PyDict_GetItemString(dict.get(), name.c_str()))
      unsupported("side_effect", "replacing " + std::string(table + 1) + " '" + name + "' of " + repr());
  }
  if (dynamic_cast<ModuleValue*>(value.get()) || (value->python_type() && value->python_type() != Bridge::get().tensor_type.get() &&
                                                  PyObject_IsSubclass(value->python_type(), Bridge::get().tensor_type.get()) == 1))
    unsupported("side_effect", "registering '" + name + "' (a module or parameter) on " + repr());
  py::Ref<> key = check(PyUnicode_FromString(name.c_str()));
  PyObject* on_class = _PyType_Lookup(Py_TYPE(module_.get()), key.get());  // borrowed
  if (on_class && Py_TYPE(on_class)->tp_descr_set) unsupported("side_effect", "setting '" + name + "', a descriptor of " + repr());
  // A plain attribute, or a buffer's new tensor: the module's own __setattr__ stores it where
  // it belongs when generated code writes it back.
  tracer.will_mutate(shared_from_this());
  assign_named(attrs, name, value);
}

namespace {

// What a lazy module's first call is given, as example values: the fake tensors (named tuples
// made again, their fields read by name).
py::Ref<> example_argument(Tracer& tracer, const ValuePtr& value) {
  if (auto* tuple = dynamic_cast<SequenceValue*>(value.get()); tuple && tuple->tuple_type && !tuple->is_size()) {
    py::Ref<> items = check(PyList_New(0));
    for (const auto& item : tuple->items) check_status(PyList_Append(items.get(), example_argument(tracer, item).get()));
    py::Ref<> make = check(PyObject_GetAttrString(tuple->tuple_type.get(), "_make"));
    return check(PyObject_CallOneArg(make.get(), items.get()));
  }
  return value->as_graph_arg(tracer, ArgMode::Fake);
}

}  // namespace

// torch.nn's lazy modules (LazyLinear, LazyModuleMixin) make their parameters on the first
// call, from the shapes of its arguments, in a forward pre-hook (_infer_parameters). That runs
// for real, given the arguments' example values, as the eager first call runs it: the trace
// then sees the module as it is from then on (its parameters made, its class the one it
// becomes).
namespace {

void infer_lazy_parameters(Tracer& tracer, PyObject* module, const Args& args, const KwArgs& kwargs) {
  py::Ref<> positional = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  py::Ref<> named = check(PyDict_New());
  try {
    for (size_t i = 0; i < args.size(); ++i)
      PyTuple_SET_ITEM(positional.get(), static_cast<Py_ssize_t>(i), example_argument(tracer, args[i]).release());
    for (const auto& [name, value] : kwargs)
      check_status(PyDict_SetItemString(named.get(), name.c_str(), example_argument(tracer, value).get()));
  } catch (const Unsupported& error) {
    unsupported("unsupported_call", "the first call of the lazy module " + py_repr((PyObject*)Py_TYPE(module)) + " with " + error.what());
  }
  py::Ref<> infer = check(PyObject_GetAttrString(module, "_infer_parameters"));
  py::Ref<> result = py::Ref<>::steal(PyObject_CallFunctionObjArgs(infer.get(), module, positional.get(), named.get(), nullptr));
  if (!result) {
    PythonError error = PythonError::fetch();
    unsupported("unsupported_call", "initializing the lazy module " + py_repr((PyObject*)Py_TYPE(module)) + " raised " + error.what());
  }
}

}  // namespace

ValuePtr initialize_lazy_module(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  // _infer_parameters(self, module, args, kwargs=None)
  if (args.size() < 3 || args.size() > 4 || !kwargs.empty() || !args[1]->real_object())
    unsupported("unsupported_call", "LazyModuleMixin._infer_parameters with these arguments");
  auto positional = args[2]->unpack(tracer);
  if (!positional) unsupported("unsupported_call", "a lazy module's first call with arguments " + args[2]->repr());
  KwArgs named;
  if (args.size() == 4 && !(args[3]->is_constant() && args[3]->constant() == Py_None)) {
    auto* keywords = dynamic_cast<DictValue*>(args[3].get());
    if (keywords == nullptr) unsupported("unsupported_call", "keyword arguments " + args[3]->repr());
    for (size_t i = 0; i < keywords->keys.size(); ++i) {
      if (!PyUnicode_Check(keywords->keys[i].get())) unsupported("unsupported_call", "keyword arguments " + args[3]->repr());
      named.emplace_back(PyUnicode_AsUTF8(keywords->keys[i].get()), keywords->values[i]);
    }
  }
  infer_lazy_parameters(tracer, args[1]->real_object(), *positional, named);
  return ConstantValue::none();
}

namespace {

bool is_subclass_tensor(const ValuePtr& value) {
  if (!value || !value->is_tensor()) return false;
  PyObject* type = value->python_type();
  return type != Bridge::get().tensor_type.get() && !guards::TensorMeta::get().is_parameter_type(type);
}

// A tensor subclass among a module's arguments (directly or in a list or tuple): its
// __torch_function__ (or its dispatch) sees each op of the forward and may give the result its
// class, so the forward is inlined, not recorded as one call of the module.
bool takes_subclass_tensor(const Args& args, const KwArgs& kwargs) {
  auto any_in = [](const ValuePtr& value) {
    if (is_subclass_tensor(value)) return true;
    if (auto* sequence = dynamic_cast<SequenceValue*>(value.get()))
      return std::any_of(sequence->items.begin(), sequence->items.end(), is_subclass_tensor);
    return false;
  };
  return std::any_of(args.begin(), args.end(), any_in) ||
         std::any_of(kwargs.begin(), kwargs.end(), [&](const auto& entry) { return any_in(entry.second); });
}

}  // namespace

ValuePtr ModuleValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  // A lazy module's first call: its parameters made before its hooks and attributes are read.
  if (PyObject_TypeCheck(module_.get(), reinterpret_cast<PyTypeObject*>(Bridge::get().lazy_mixin.get())) &&
      PyObject_HasAttrString(module_.get(), "_initialize_hook"))
    infer_lazy_parameters(tracer, module_.get(), args, kwargs);
  if (has_backward_hooks(module_.get())) unsupported("module_hooks", repr() + " has backward hooks");
  PyObject* type = (PyObject*)Py_TYPE(module_.get());
  const Bridge& bridge = Bridge::get();
  Args all{shared_from_this()};
  all.insert(all.end(), args.begin(), args.end());
  // A class that overrides __call__ runs its own (torch.nn's runs forward and the hooks).
  py::Ref<> call_name = check(PyUnicode_FromString("__call__"));
  PyObject* call_on_class = _PyType_Lookup(Py_TYPE(module_.get()), call_name.get());
  guards::SourcePtr call_source = guards::class_attr_source(type, "__call__");
  if (call_on_class != bridge.module_call.get()) {
    if (!call_on_class || !PyFunction_Check(call_on_class)) unsupported("unsupported_call", repr() + ".__call__ is not a Python function");
    return tracer.wrap_user_function(call_on_class, call_source)->call(tracer, all, kwargs);
  }
  tracer.guards.add(GuardLog::Kind::Id, call_source, call_on_class);
  if (has_hooks(module_.get())) {
    // Forward hooks: torch.nn's own __call__ inlined runs them around forward, reading the
    // hook dicts (each guarded on its keys and hooks) as it does eagerly.
    return tracer.wrap_user_function(call_on_class, call_source)->call(tracer, all, kwargs);
  }
  // Valid while no hook is registered for every module either (the global-state guard).
  tracer.read_state(guards::TracedState::ModuleHooks);
  if (source()) {
    // Valid while no hook is registered on the module.
    for (const char* hooks : {"_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"})
      if (PyObject_HasAttrString(module_.get(), hooks)) tracer.guards.add(GuardLog::Kind::Length, guards::attr_source(source(), hooks), nullptr, 0);
  }
  // A forward assigned on the instance is what torch.nn's __call__ runs.
  py::Ref<> dict = check(PyObject_GenericGetDict(module_.get(), nullptr));
  if (PyObject* own = PyDict_GetItemString(dict.get(), "forward")) {
    if (!source()) unsupported("unsupported_call", repr() + " has a forward of its own and no source");
    return tracer.wrap(own, guards::instance_dict_source(source(), "forward"))->call(tracer, args, kwargs);
  }
  if (source()) {
    py::Ref<> key = check(PyUnicode_FromString("forward"));
    tracer.guards.add(GuardLog::Kind::LacksKey, guards::instance_dict_of(source()), key.get());
  }
  if (leaf_ && !takes_subclass_tensor(args, kwargs)) {
    std::string name = source() ? graph::identifier_from(source()->repr()) : "module";
    guard_leaf_tensors(tracer);
    return tracer.record_module_call(module_.get(), name, args, kwargs);
  }
  py::Ref<> forward = check(PyObject_GetAttrString(type, "forward"));
  if (!PyFunction_Check(forward.get())) unsupported("unsupported_call", repr() + ".forward is not a Python function");
  auto function = tracer.wrap_user_function(forward.get(), guards::class_attr_source(type, "forward"));
  // A staticmethod forward is called without the module.
  py::Ref<> forward_name = check(PyUnicode_FromString("forward"));
  PyObject* descriptor = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(type), forward_name.get());
  if (descriptor && Py_TYPE(descriptor) == &PyStaticMethod_Type) return function->call(tracer, args, kwargs);
  return function->call(tracer, all, kwargs);
}

// A leaf module's graph node reads its parameters and buffers when it runs, but a backend
// that compiles ahead (AOTAutograd) takes them as they were: each is guarded like a tensor a
// traced forward reads.
void ModuleValue::guard_leaf_tensors(Tracer& tracer) {
  if (!source()) return;
  for (const char* listing : {"named_parameters", "named_buffers"}) {
    py::Ref<> named = check(PyObject_CallMethod(module_.get(), listing, nullptr));
    py::Ref<> items = check(PySequence_List(named.get()));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.get()); ++i) {
      PyObject* pair = PyList_GET_ITEM(items.get(), i);
      std::string path = PyUnicode_AsUTF8(PyTuple_GET_ITEM(pair, 0));
      PyObject* tensor = PyTuple_GET_ITEM(pair, 1);
      guards::SourcePtr at = source();
      size_t start = 0;
      for (size_t dot = path.find('.'); ; dot = path.find('.', start)) {
        at = guards::attr_source(at, path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      tracer.pin_module_tensor(tensor, at);
    }
  }
}

void ModuleValue::guard_children(Tracer& tracer) {
  if (!source()) return;
  py::Ref<> modules = check(PyObject_GetAttrString(module_.get(), "_modules"));
  if (PyDict_CheckExact(modules.get()))
    tracer.guards.add(GuardLog::Kind::DictKeys, guards::attr_source(source(), "_modules"),
                      check(PySequence_Tuple(check(PyDict_Keys(modules.get())).get())).get());
}

std::optional<Args> ModuleValue::unpack(Tracer& tracer) {
  py::Ref<> modules = check(PyObject_GetAttrString(module_.get(), "_modules"));
  guard_children(tracer);
  const char* type_name = Py_TYPE(module_.get())->tp_name;
  std::string type(type_name);
  if (type.find("ModuleDict") != std::string::npos) {
    Args keys;
    PyObject *key, *item;
    Py_ssize_t position = 0;
    while (PyDict_Next(modules.get(), &position, &key, &item)) keys.push_back(ConstantValue::make(py::Ref<>::newref(key)));
    return keys;
  }
  if (type.find("ModuleList") == std::string::npos && type.find("Sequential") == std::string::npos) return std::nullopt;
  Args children;
  PyObject *key, *item;
  Py_ssize_t position = 0, index = 0;
  while (PyDict_Next(modules.get(), &position, &key, &item)) {
    guards::SourcePtr child = source() ? guards::item_source(source(), check(PyLong_FromSsize_t(index))) : nullptr;
    children.push_back(tracer.wrap(item, child));
    ++index;
  }
  return children;
}

namespace {

// `layers[:n]` of a ModuleList or Sequential: a new container of the same children. The real
// one is made at trace time for its type and length; the children are the parent's (read
// through the parent's source). Iterated, indexed, measured or (Sequential) called in the
// trace; it has no identity of its own, so it is not rebuilt after a break or returned.
class ModuleSliceValue : public Value {
 public:
  ModuleSliceValue(py::Ref<> real, Args children) : real_(std::move(real)), children_(std::move(children)) {}
  std::string repr() const override { return std::string("ModuleSliceVariable(") + Py_TYPE(real_.get())->tp_name + ")"; }
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(real_.get()); }
  PyObject* real_object() const override { return real_.get(); }
  bool truthy(Tracer&) const override { return true; }
  std::optional<Args> unpack(Tracer&) override { return children_; }
  ValuePtr get_item(Tracer&, const ValuePtr& key) override {
    if (!key->is_constant() || !PyLong_Check(key->constant())) unsupported("unsupported_subscript", repr() + "[" + key->repr() + "]");
    long index = PyLong_AsLong(key->constant());
    if (index < 0) index += static_cast<long>(children_.size());
    if (index < 0 || index >= static_cast<long>(children_.size())) raise_error("index_error", PyExc_IndexError, "index " + std::to_string(index) + " is out of range");
    return children_[index];
  }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    py::Ref<> forward = check(PyObject_GetAttrString((PyObject*)Py_TYPE(real_.get()), "forward"));
    if (!PyFunction_Check(forward.get())) unsupported("unsupported_call", repr() + ".forward is not a Python function");
    Args all{shared_from_this()};
    all.insert(all.end(), args.begin(), args.end());
    return tracer.wrap_user_function(forward.get(), nullptr)->call(tracer, all, kwargs);
  }

 private:
  py::Ref<> real_;
  Args children_;
};

}  // namespace

ValuePtr ModuleValue::get_item(Tracer& tracer, const ValuePtr& key) {
  if (key->is_constant() && PySlice_Check(key->constant())) {
    std::optional<Args> children = unpack(tracer);
    py::Ref<> modules = check(PyObject_GetAttrString(module_.get(), "_modules"));
    if (!children || PyDict_Size(modules.get()) != static_cast<Py_ssize_t>(children->size()))
      unsupported("unsupported_subscript", repr() + "[" + key->repr() + "]");
    py::Ref<> real = check(PyObject_GetItem(module_.get(), key->constant()));
    Py_ssize_t start, stop, step;
    check_status(PySlice_Unpack(key->constant(), &start, &stop, &step));
    Py_ssize_t count = PySlice_AdjustIndices(static_cast<Py_ssize_t>(children->size()), &start, &stop, step);
    Args picked;
    for (Py_ssize_t i = 0, at = start; i < count; ++i, at += step) picked.push_back((*children)[at]);
    return std::make_shared<ModuleSliceValue>(std::move(real), std::move(picked));
  }
  if (!key->is_constant())
    unsupported("unsupported_subscript", repr() + "[" + key->repr() + "]");
  py::Ref<> real = check(PyObject_GetItem(module_.get(), key->constant()));
  return tracer.wrap(real.get(), source() ? guards::item_source(source(), py::Ref<>::newref(key->constant())) : nullptr);
}

std::string PythonModuleValue::repr() const {
  return "PythonModuleVariable(" + std::string(PyModule_GetName(module_.get())) + ")";
}

// A module's attributes are its globals: what the trace assigned to one (through the module
// or by a function of that module) is what later reads see.
ValuePtr PythonModuleValue::get_attr(Tracer& tracer, const std::string& name) {
  if (const SideEffects::GlobalWrite* written = tracer.side_effects.global_written(PyModule_GetDict(module_.get()), name)) {
    if (!written->value)
      raise_error("attribute_error", PyExc_AttributeError,
                  "module '" + std::string(PyModule_GetName(module_.get())) + "' has no attribute '" + name + "'");
    return written->value;
  }
  PyObject* attribute = PyObject_GetAttrString(module_.get(), name.c_str());
  if (attribute == nullptr) {
    PythonError error = PythonError::fetch();
    unsupported("unsupported_attribute", error.what());
  }
  py::Ref<> real = py::Ref<>::steal(attribute);
  return tracer.wrap(real.get(), source() ? guards::attr_source(source(), name) : nullptr);
}

void PythonModuleValue::write(Tracer& tracer, const std::string& name, ValuePtr value) {
  // Generated code writes the module's dict; without a source the trace cannot name it.
  if (!source()) unsupported("side_effect", "assigning " + name + " of " + repr());
  tracer.side_effects.write_global(PyModule_GetDict(module_.get()), name, std::move(value));
}

void PythonModuleValue::set_attr(Tracer& tracer, const std::string& name, const ValuePtr& value) {
  write(tracer, name, value);
}

void PythonModuleValue::del_attr(Tracer& tracer, const std::string& name) {
  get_attr(tracer, name);  // deleting a missing attribute raises AttributeError
  write(tracer, name, nullptr);
}

}  // namespace bytegraph::trace
