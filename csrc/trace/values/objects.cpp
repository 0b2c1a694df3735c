// Instances of Python classes (ObjectValue) and the classes themselves (ClassValue): attribute
// access as object.__getattribute__ / __setattr__ do it, Python overrides inlined, changes
// kept on the symbolic object and written back (or the object made) after the graph.
#include <cstring>
#include "python/type_dict.h"

#include "trace/operators.h"
#include "trace/tracer.h"
#include "trace/values/builtin_bases.h"
#include "trace/values/exceptions.h"
#include "trace/values/generators.h"
#include "trace/values/instance_dict.h"
#include "trace/values/keys.h"
#include "trace/values/sets.h"

namespace bytegraph::trace {

namespace {

using guards::SourcePtr;

// The attribute `name` on `type` through its MRO, without binding (borrowed), or null.
PyObject* type_lookup(PyObject* type, const std::string& name) {
  py::Ref<> key = check(PyUnicode_FromString(name.c_str()));
  return _PyType_Lookup(reinterpret_cast<PyTypeObject*>(type), key.get());
}

PyObject* object_slot(const char* name) {
  return py::own_type_attribute(&PyBaseObject_Type, name);  // borrowed, lives forever
}

bool is_data_descriptor(PyObject* descriptor) {
  return descriptor != nullptr && Py_TYPE(descriptor)->tp_descr_set != nullptr;
}

// A slot a Python class declares in __slots__: on an object made in the trace it holds what
// the trace wrote (object.__setattr__ writes it back the same way), or nothing yet.
// The C dict subclasses made in a trace like Python ones.
bool is_builtin_dict_class(PyTypeObject* type) {
  return std::strcmp(type->tp_name, "collections.OrderedDict") == 0 || std::strcmp(type->tp_name, "collections.defaultdict") == 0;
}

bool is_default_dict(PyObject* type) {
  for (auto* base = reinterpret_cast<PyTypeObject*>(type); base != nullptr; base = base->tp_base)
    if (std::strcmp(base->tp_name, "collections.defaultdict") == 0) return true;
  return false;
}

// A slot an object keeps as a plain value: one declared by __slots__, or defaultdict's
// default_factory.
bool is_declared_slot(PyObject* descriptor) {
  if (descriptor == nullptr || Py_TYPE(descriptor) != &PyMemberDescr_Type) return false;
  PyTypeObject* owner = reinterpret_cast<PyDescrObject*>(descriptor)->d_type;
  return PyType_HasFeature(owner, Py_TPFLAGS_HEAPTYPE) || std::strcmp(owner->tp_name, "collections.defaultdict") == 0;
}

// A Python override of a special method (not object's own slot, not a C base's): the
// function to inline, or null when the class does not override it.
PyObject* python_override(PyObject* type, const char* name) {
  PyObject* found = type_lookup(type, name);
  if (found == nullptr || found == object_slot(name)) return nullptr;
  if (PyFunction_Check(found)) return found;
  return nullptr;
}

// A special method found on `type` (its own or a base's), inlined; guarded where the class
// holds it, so patching it on the class recompiles.
ValuePtr inline_function(Tracer& tracer, PyObject* type, const char* name, PyObject* function, const Args& args,
                         const KwArgs& kwargs = {}) {
  return tracer.wrap_user_function(function, guards::class_attr_source(type, name))->call(tracer, args, kwargs);
}

py::Ref<> unicode(const std::string& text) { return check(PyUnicode_FromString(text.c_str())); }

}  // namespace

std::string ObjectValue::repr() const {
  std::string name = reinterpret_cast<PyTypeObject*>(type_.get())->tp_name;
  return std::string(is_new() ? "NewObjectVariable(" : "ObjectVariable(") + name +
         (source() ? ", " + source()->repr() : std::string()) + ")";
}

SourcePtr ObjectValue::class_attribute_source(const std::string& name) const {
  return guards::class_attr_source(type_.get(), name);
}

// A non-data descriptor or plain value found on the class: methods bind to this object.
ValuePtr ObjectValue::class_attribute(Tracer& tracer, PyObject* descriptor, const std::string& name) {
  auto self = std::static_pointer_cast<ObjectValue>(shared_from_this());
  if (PyFunction_Check(descriptor))
    return std::make_shared<BoundMethodValue>(tracer.wrap_user_function(descriptor, class_attribute_source(name)), self);
  if (Py_TYPE(descriptor) == &PyStaticMethod_Type || Py_TYPE(descriptor) == &PyClassMethod_Type) {
    // Bound by the class itself: the same object whether read from the class or an instance.
    py::Ref<> bound = check(PyObject_GetAttrString(type_.get(), name.c_str()));
    return tracer.wrap(bound.get(), class_attribute_source(name));
  }
  if (Py_TYPE(descriptor)->tp_descr_get != nullptr) {
    // A C method of a builtin base (dict.keys on a dict subclass): applied to the symbolic object.
    return std::make_shared<ObjectSlotValue>(self, name);
  }
  return tracer.wrap(descriptor, class_attribute_source(name));
}

ValuePtr ObjectValue::get_attr(Tracer& tracer, const std::string& name) {
  if (name == "__class__") return tracer.wrap(type_.get(), class_source);
  if (PyObject* override = python_override(type_.get(), "__getattribute__")) {
    ValuePtr key = ConstantValue::make(unicode(name));
    return inline_function(tracer, type_.get(), "__getattribute__", override, {shared_from_this(), key});
  }
  return generic_get_attr(tracer, name);
}

ValuePtr ObjectValue::generic_get_attr(Tracer& tracer, const std::string& name) {
  PyObject* descriptor = type_lookup(type_.get(), name);
  if (is_data_descriptor(descriptor)) {
    if (PyObject_TypeCheck(descriptor, &PyProperty_Type)) {
      py::Ref<> getter = check(PyObject_GetAttrString(descriptor, "fget"));
      if (!PyFunction_Check(getter.get())) unsupported("unsupported_attribute", repr() + "." + name + " has no Python getter");
      // Guarded as the property's getter, so what it reads from its closure is guarded too.
      guards::SourcePtr getter_source = guards::attr_source(class_attribute_source(name), "fget");
      return tracer.wrap_user_function(getter.get(), getter_source)->call(tracer, {shared_from_this()}, {});
    }
    if (is_new() && name == "__dict__")
      return std::make_shared<InstanceDictValue>(std::static_pointer_cast<ObjectValue>(shared_from_this()));
    if (!is_new() && name == "__dict__") return exposed_dict(tracer);
    if (is_new() && is_exception_slot(type_.get(), name)) return exception_slot(tracer, *this, name);
    if (is_new() && is_declared_slot(descriptor)) {
      for (const auto& [attr, value] : attrs)
        if (attr == name && value) return value;
      raise_error("attribute_error", PyExc_AttributeError, "'" + std::string(reinterpret_cast<PyTypeObject*>(type_.get())->tp_name) +
                                                               "' object has no attribute '" + name + "'");
    }
    if (is_new()) unsupported("unsupported_attribute", repr() + "." + name + " is a slot of an object made in the trace");
    // A slot the trace wrote (or deleted) reads as written: the real object changes only
    // when the writes are replayed after the graph.
    for (const auto& [attr, value] : attrs) {
      if (attr != name) continue;
      if (value) return value;
      raise_error("attribute_error", PyExc_AttributeError, "'" + std::string(reinterpret_cast<PyTypeObject*>(type_.get())->tp_name) +
                                                               "' object has no attribute '" + name + "'");
    }
    py::Ref<> real = check(PyObject_GetAttrString(real_.get(), name.c_str()));
    return tracer.wrap(real.get(), source() ? guards::attr_source(source(), name) : nullptr);
  }
  for (const auto& [attr, value] : attrs) {
    if (attr != name) continue;
    if (value) return value;
    descriptor = nullptr;  // deleted in the trace: what the class has is shadowed no more
    goto missing;
  }
  if (!is_new()) {
    check_dict_unchanged(tracer, name);
    py::Ref<> dict = py::Ref<>::steal(PyObject_GenericGetDict(real_.get(), nullptr));
    if (!dict) PyErr_Clear();
    PyObject* found = dict ? PyDict_GetItemString(dict.get(), name.c_str()) : nullptr;  // borrowed
    if (found != nullptr) return tracer.wrap(found, source() ? guards::instance_dict_source(source(), name) : nullptr);
    if (source() && dict) {
      // The class's attribute is what the code sees only while the instance does not shadow it.
      tracer.guards.add(GuardLog::Kind::LacksKey, guards::instance_dict_of(source()), unicode(name).get());
    }
  }
  if (descriptor != nullptr) return class_attribute(tracer, descriptor, name);
missing:
  // Absent from the class (and its bases) too: valid while none of them is given it.
  if (!is_new() || source()) tracer.guards.add(GuardLog::Kind::LacksAttr, guards::class_source(type_.get()), unicode(name).get());
  if (PyObject* getattr_hook = python_override(type_.get(), "__getattr__"))
    return inline_function(tracer, type_.get(), "__getattr__", getattr_hook, {shared_from_this(), ConstantValue::make(unicode(name))});
  raise_error("attribute_error", PyExc_AttributeError, "'" + std::string(reinterpret_cast<PyTypeObject*>(type_.get())->tp_name) +
                                                           "' object has no attribute '" + name + "'");
}

void ObjectValue::set_attr(Tracer& tracer, const std::string& name, const ValuePtr& value) {
  if (PyObject* override = python_override(type_.get(), "__setattr__")) {
    inline_function(tracer, type_.get(), "__setattr__", override, {shared_from_this(), ConstantValue::make(unicode(name)), value});
    return;
  }
  generic_set_attr(tracer, name, value);
}

// The instance dict of an object from outside, read as a dict. It and the attributes the trace
// changes are two views of one real dict: while both could change, neither is read stale —
// the trace breaks where they would disagree.
ValuePtr ObjectValue::exposed_dict(Tracer& tracer) {
  if (exposed_dict_) return exposed_dict_;
  for (const auto& [attr, value] : attrs) {
    (void)value;
    unsupported("side_effect", "reading the __dict__ of " + repr() + " after the trace changed its attribute '" + attr + "'");
  }
  py::Ref<> real = check(PyObject_GetAttrString(real_.get(), "__dict__"));
  exposed_dict_ = tracer.wrap(real.get(), source() ? guards::attr_source(source(), "__dict__") : nullptr);
  return exposed_dict_;
}

void ObjectValue::check_dict_unchanged(Tracer& tracer, const std::string& name) const {
  if (!exposed_dict_) return;
  for (const ValuePtr& mutated : tracer.side_effects.mutated())
    if (mutated == exposed_dict_)
      unsupported("side_effect", "attribute '" + name + "' of " + repr() + " after the trace changed its __dict__");
}

void ObjectValue::generic_set_attr(Tracer& tracer, const std::string& name, const ValuePtr& value) {
  if (!is_new() && exposed_dict_)
    unsupported("side_effect", "changing attribute '" + name + "' of " + repr() + " after its __dict__ was read");
  PyObject* descriptor = type_lookup(type_.get(), name);
  if (is_data_descriptor(descriptor)) {
    if (PyObject_TypeCheck(descriptor, &PyProperty_Type)) {
      py::Ref<> setter = check(PyObject_GetAttrString(descriptor, "fset"));
      if (!PyFunction_Check(setter.get())) unsupported("side_effect", repr() + "." + name + " has no Python setter");
      tracer.wrap_user_function(setter.get(), guards::attr_source(class_attribute_source(name), "fset"))->call(tracer, {shared_from_this(), value}, {});
      return;
    }
    if (is_new() && !is_exception_slot(type_.get(), name) && !is_declared_slot(descriptor))
      unsupported("side_effect", "setting slot '" + name + "' of " + repr());
    // A C slot of an object from outside: written back like an attribute (object.__setattr__
    // goes through the descriptor).
  }
  tracer.will_mutate(shared_from_this());
  assign_named(attrs, name, value);
}

void ObjectValue::del_attr(Tracer& tracer, const std::string& name) {
  if (PyObject* override = python_override(type_.get(), "__delattr__")) {
    inline_function(tracer, type_.get(), "__delattr__", override, {shared_from_this(), ConstantValue::make(unicode(name))});
    return;
  }
  generic_del_attr(tracer, name);
}

void ObjectValue::generic_del_attr(Tracer& tracer, const std::string& name) {
  if (!is_new() && exposed_dict_)
    unsupported("side_effect", "deleting attribute '" + name + "' of " + repr() + " after its __dict__ was read");
  // Only what exists may be deleted: the read raises the break if it does not.
  generic_get_attr(tracer, name);
  tracer.will_mutate(shared_from_this());
  for (auto& [attr, current] : attrs) {
    if (attr == name) {
      current = nullptr;
      return;
    }
  }
  attrs.emplace_back(name, nullptr);
}

// defaultdict.__missing__: default_factory() stored under the key, or KeyError without one.
ValuePtr ObjectValue::default_dict_missing(Tracer& tracer, const ValuePtr& key) {
  ValuePtr factory = generic_get_attr(tracer, "default_factory");
  if (factory->is_constant() && factory->constant() == Py_None) raise_error("key_error", PyExc_KeyError, key);
  ValuePtr made = factory->call(tracer, {}, {});
  ObjectSlotValue(std::static_pointer_cast<ObjectValue>(shared_from_this()), "__setitem__").call(tracer, {key, made}, {});
  return made;
}

bool ObjectValue::overrides(const char* name) const { return python_override(type_.get(), name) != nullptr; }

ValuePtr ObjectValue::inline_special(Tracer& tracer, const char* name, const Args& args) {
  PyObject* function = python_override(type_.get(), name);
  if (function == nullptr) return nullptr;
  Args all{shared_from_this()};
  all.insert(all.end(), args.begin(), args.end());
  return inline_function(tracer, type_.get(), name, function, all);
}

ValuePtr ObjectValue::bound_special(Tracer& tracer, const char* name) {
  PyObject* function = python_override(type_.get(), name);
  if (function == nullptr) return nullptr;
  return std::make_shared<BoundMethodValue>(tracer.wrap_user_function(function, guards::class_attr_source(type_.get(), name)),
                                            shared_from_this());
}

ValuePtr ObjectValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  PyObject* function = python_override(type_.get(), "__call__");
  if (function == nullptr) unsupported("unsupported_call", "calling " + repr());
  Args all{shared_from_this()};
  all.insert(all.end(), args.begin(), args.end());
  return inline_function(tracer, type_.get(), "__call__", function, all, kwargs);
}

bool ObjectValue::truthy(Tracer& tracer) const {
  auto self = std::const_pointer_cast<ObjectValue>(std::static_pointer_cast<const ObjectValue>(shared_from_this()));
  for (const char* name : {"__bool__", "__len__"}) {
    if (ValuePtr result = self->inline_special(tracer, name, {})) return result->truthy(tracer);
  }
  if (ValuePtr items = self->builtin_items(tracer)) return items->truthy(tracer);
  if (type_lookup(type_.get(), "__bool__") || type_lookup(type_.get(), "__len__"))
    unsupported("unsupported_branch", "truth value of " + repr());
  return true;
}

ValuePtr ObjectValue::get_item(Tracer& tracer, const ValuePtr& key) {
  if (ValuePtr result = inline_special(tracer, "__getitem__", {key})) return result;
  if (sequence_ || is_list_subclass() || is_tuple_subclass()) return sequence_storage(tracer)->get_item(tracer, key);
  if (items_ || PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type_.get()), &PyDict_Type)) {
    std::shared_ptr<DictValue> items = dict_storage(tracer);
    if (items->find(dict_key(tracer, key, "unsupported_subscript").get()) < 0) {
      // dict.__getitem__ asks the class's __missing__ for an absent key.
      if (ValuePtr made = inline_special(tracer, "__missing__", {key})) return made;
      if (is_default_dict(type_.get())) return default_dict_missing(tracer, key);
    }
    return items->get_item(tracer, key);
  }
  unsupported("unsupported_subscript", repr() + "[" + key->repr() + "]");
}

void ObjectValue::set_item(Tracer& tracer, const ValuePtr& key, const ValuePtr& value) {
  if (inline_special(tracer, "__setitem__", {key, value})) return;
  if (PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type_.get()), &PyDict_Type) || is_list_subclass()) {
    ObjectSlotValue(std::static_pointer_cast<ObjectValue>(shared_from_this()), "__setitem__").call(tracer, {key, value}, {});
    return;
  }
  unsupported("unsupported_subscript", "assigning an item of " + repr());
}

std::optional<Args> ObjectValue::unpack(Tracer& tracer) {
  if (python_override(type_.get(), "__iter__")) {
    ValuePtr iterator = inline_special(tracer, "__iter__", {});
    if (iterator->is_iterator()) return drain(tracer, *iterator);
    return iterator->unpack(tracer);
  }
  if (ValuePtr items = builtin_items(tracer)) return items->unpack(tracer);
  return std::nullopt;
}

bool ObjectValue::is_iterator() const { return python_override(type_.get(), "__next__") != nullptr; }

// The class's Python __next__, a step at a time (a loop's body runs between two steps, as in
// the real program); StopIteration from it ends the iteration.
ValuePtr ObjectValue::next_item(Tracer& tracer) {
  try {
    return inline_special(tracer, "__next__", {});
  } catch (const Raised& raised) {
    if (raised.is_a(PyExc_StopIteration)) return nullptr;
    throw;
  }
}

// ---- methods of object and of builtin bases, on a symbolic object ----------------------

ValuePtr ObjectSlotValue::get_attr(Tracer& tracer, const std::string& name) {
  return builtin_method_attribute(tracer, self_, name_, name);
}

ValuePtr ObjectSlotValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (!kwargs.empty()) unsupported("unsupported_call", repr() + " with keyword arguments");
  auto name_arg = [&](size_t i) -> std::string {
    if (i >= args.size() || !args[i]->is_constant() || !PyUnicode_Check(args[i]->constant()))
      unsupported("unsupported_call", repr() + " with a non-constant name");
    return PyUnicode_AsUTF8(args[i]->constant());
  };
  if (name_ == "__getattribute__" && args.size() == 1) return self_->generic_get_attr(tracer, name_arg(0));
  if (name_ == "__setattr__" && args.size() == 2) {
    self_->generic_set_attr(tracer, name_arg(0), args[1]);
    return ConstantValue::none();
  }
  if (name_ == "__delattr__" && args.size() == 1) {
    self_->generic_del_attr(tracer, name_arg(0));
    return ConstantValue::none();
  }
  if (is_exception(*self_)) {
    // BaseException's own methods on an exception made in the trace (super().__init__(msg)).
    if (name_ == "__init__" && self_->is_new()) {
      init_exception(tracer, *self_, args, kwargs);
      return ConstantValue::none();
    }
    if (name_ == "with_traceback" && args.size() == 1 && args[0]->is_constant() && args[0]->constant() == Py_None) {
      self_->generic_set_attr(tracer, "__traceback__", args[0]);
      return self_;
    }
  }
  if (name_ == "__init__" && args.empty()) return ConstantValue::none();
  // The items of a dict or set subclass: the base class's own behaviour.
  if (ValuePtr result = call_base_method(tracer, self_, name_, args)) return result;
  unsupported("unsupported_call", repr() + " with " + std::to_string(args.size()) + " arguments");
}

// ---- classes ------------------------------------------------------------------------------

std::string ClassValue::repr() const {
  return "UserDefinedClassVariable(" + std::string(reinterpret_cast<PyTypeObject*>(real_object())->tp_name) + ")";
}

namespace {

bool builtin_new(PyObject* type) {
  // Instances whose allocation generated code can repeat with cls.__new__(cls): object's and
  // dict's (an OrderedDict subclass included) allocators, not a Python __new__.
  PyObject* found = type_lookup(type, "__new__");
  return found != nullptr && !PyFunction_Check(found) && Py_TYPE(found) != &PyStaticMethod_Type;
}

ValuePtr make_named_tuple(Tracer& tracer, PyObject* type, const Args& args, const KwArgs& kwargs) {
  py::Ref<> fields = named_tuple_fields(type);
  Args items = args;
  Py_ssize_t count = PyTuple_GET_SIZE(fields.get());
  items.resize(static_cast<size_t>(count));
  for (const auto& [name, value] : kwargs) {
    bool found = false;
    for (Py_ssize_t i = 0; i < count; ++i) {
      if (name == PyUnicode_AsUTF8(PyTuple_GET_ITEM(fields.get(), i))) {
        items[i] = value;
        found = true;
      }
    }
    if (!found) raise_error("bad_call", PyExc_TypeError, "unexpected field '" + name + "'");
  }
  // Missing fields take the class's defaults (namedtuple(..., defaults=...)).
  py::Ref<> defaults = py::Ref<>::steal(PyObject_GetAttrString(type, "_field_defaults"));
  if (!defaults) PyErr_Clear();
  for (Py_ssize_t i = 0; i < count; ++i) {
    if (items[i]) continue;
    PyObject* fallback = defaults && PyDict_Check(defaults.get()) ? PyDict_GetItem(defaults.get(), PyTuple_GET_ITEM(fields.get(), i)) : nullptr;
    if (fallback == nullptr) raise_error("bad_call", PyExc_TypeError, "missing field of " + py_repr(type));
    items[i] = tracer.wrap(fallback, nullptr);
  }
  auto tuple = std::make_shared<SequenceValue>(false, std::move(items));
  tuple->tuple_type = py::Ref<>::newref(type);
  return tuple;
}

}  // namespace

namespace {

// Whether every value of the module's dict `name` (_parameters, _buffers, _modules) is None.
bool holds_nothing(PyObject* module, const char* name) {
  py::Ref<> dict = check(PyObject_GetAttrString(module, name));
  if (!PyDict_Check(dict.get())) return false;
  PyObject *key, *value;  // borrowed
  Py_ssize_t position = 0;
  while (PyDict_Next(dict.get(), &position, &key, &value))
    if (value != Py_None) return false;
  return true;
}

}  // namespace

// `nn.CrossEntropyLoss()`, `nn.Softmax(dim=-1)` inside a forward: a module of torch.nn's own,
// made from constant arguments, that holds no parameter, buffer or submodule is the same on
// every call, so one made now for real stands for all of them (a call_module leaf of the
// graph). It cannot leave the frame (generated code would return this one object every time).
ValuePtr ClassValue::make_stateless_module(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  PyObject* type = real_object();
  auto refuse = [&](const std::string& why) -> ValuePtr {
    unsupported("unsupported_call", "making a new nn.Module (" + repr() + ") inside a compiled function: " + why);
  };
  for (const ValuePtr& arg : args)
    if (!arg->is_constant()) return refuse("an argument is not a constant");
  for (const auto& [name, value] : kwargs)
    if (!value->is_constant()) return refuse("an argument is not a constant");
  // Only torch.nn's leaf modules: their constructors run no user code.
  py::Ref<> probe = check(PyObject_CallMethod(type, "__new__", "O", type));
  if (classify(probe.get()) != ObjectKind::LeafModule) return refuse("only torch.nn's own leaf modules are made in a trace");
  py::Ref<> module = check(call_with_constants(type, args, kwargs));
  if (!holds_nothing(module.get(), "_parameters") || !holds_nothing(module.get(), "_buffers") ||
      !holds_nothing(module.get(), "_modules"))
    return refuse("it holds parameters, buffers or submodules of its own");
  return std::make_shared<ModuleValue>(std::move(module), /*leaf=*/true, nullptr);
}

namespace {

// The real object(s) a subscript key stands for: constants, objects known by identity, and
// tuples of these; null otherwise.
// The real object a subscript of a class is given: constants, objects with a real twin, and
// tuples and lists of those (`Callable[[int], bool]`: typing copies what it keeps).
py::Ref<> real_key(const ValuePtr& key) {
  if (key->is_constant()) return py::Ref<>::newref(key->constant());
  if (PyObject* real = key->real_object()) return py::Ref<>::newref(real);
  auto* sequence = dynamic_cast<SequenceValue*>(key.get());
  if (sequence == nullptr) return {};
  py::Ref<> items = check(PyList_New(0));
  for (const ValuePtr& value : sequence->items) {
    py::Ref<> item = real_key(value);
    if (!item) return {};
    check_status(PyList_Append(items.get(), item.get()));
  }
  return sequence->is_list() ? std::move(items) : check(PyList_AsTuple(items.get()));
}

// Whether `cls[key]` runs no code of the program: the class's __class_getitem__ is a builtin's
// (list[int]), typing's (Generic subclasses) or collections.abc's (Callable[[int], bool]), and
// its metaclass has no __getitem__.
bool standard_class_subscript(PyObject* cls) {
  if (type_lookup(reinterpret_cast<PyObject*>(Py_TYPE(cls)), "__getitem__") != nullptr) return false;
  PyObject* getitem = type_lookup(cls, "__class_getitem__");
  if (getitem == nullptr) return false;
  if (Py_TYPE(getitem) != &PyClassMethod_Type) return true;  // a C class method (types.GenericAlias)
  py::Ref<> function = check(PyObject_GetAttrString(getitem, "__func__"));
  if (!PyFunction_Check(function.get())) return true;
  py::Ref<> module = check(PyObject_GetAttrString(function.get(), "__module__"));
  return PyUnicode_Check(module.get()) && (PyUnicode_CompareWithASCIIString(module.get(), "typing") == 0 ||
                                           PyUnicode_CompareWithASCIIString(module.get(), "_collections_abc") == 0);
}

}  // namespace

ValuePtr class_subscript(Tracer& tracer, PyObject* cls, const ValuePtr& key) {
  py::Ref<> real = real_key(key);
  if (!real || !PyType_Check(cls) || !standard_class_subscript(cls)) return nullptr;
  py::Ref<> alias = check(PyObject_GetItem(cls, real.get()));
  return tracer.wrap(alias.get(), nullptr);
}

ValuePtr ClassValue::get_item(Tracer& tracer, const ValuePtr& key) {
  if (ValuePtr alias = class_subscript(tracer, real_object(), key)) return alias;
  return OpaqueValue::get_item(tracer, key);
}

std::shared_ptr<ObjectValue> ObjectValue::made_new(Tracer& tracer, PyObject* type) {
  auto object = std::make_shared<ObjectValue>(py::Ref<>::newref(type), py::Ref<>(), nullptr);
  std::weak_ptr<ObjectValue> weak = object;
  tracer.at_end.push_back([weak] {
    auto alive = weak.lock();
    if (!alive) return;
    alive->attrs.clear();
    alive->construction.reset();
    alive->items_.reset();
    alive->members_.reset();
    alive->sequence_.reset();
  });
  return object;
}

ValuePtr ClassValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  PyObject* type = real_object();
  auto* as_type = reinterpret_cast<PyTypeObject*>(type);
  if (named_tuple_fields(type) && PyType_IsSubtype(as_type, &PyTuple_Type)) return make_named_tuple(tracer, type, args, kwargs);
  if (PyObject_IsSubclass(type, Bridge::get().module_type.get()) == 1) return make_stateless_module(tracer, args, kwargs);
  if (Py_TYPE(type) != &PyType_Type && PyObject_TypeCheck(type, &PyType_Type)) {
    // A metaclass other than type (ABCMeta is fine: it does not override __call__).
    PyObject* meta_call = type_lookup((PyObject*)Py_TYPE(type), "__call__");
    if (meta_call != type_lookup((PyObject*)&PyType_Type, "__call__"))
      unsupported("unsupported_call", "calling " + repr() + ", whose metaclass overrides __call__");
  }
  if (is_exception_class(type)) return make_exception(tracer, type, args, kwargs, source());
  if (!builtin_new(type) || !(PyType_HasFeature(as_type, Py_TPFLAGS_HEAPTYPE) || is_builtin_dict_class(as_type)))
    unsupported("unsupported_call", "making an instance of " + repr());
  bool is_dict = PyType_IsSubtype(as_type, &PyDict_Type);
  if (!is_dict && as_type->tp_base != &PyBaseObject_Type && !PyType_IsSubtype(as_type, &PyBaseObject_Type))
    unsupported("unsupported_call", "making an instance of " + repr());
  for (PyTypeObject* base = as_type; base != nullptr; base = base->tp_base) {
    // Builtin bases other than object, dict and set keep state the symbolic object cannot model.
    if (!PyType_HasFeature(base, Py_TPFLAGS_HEAPTYPE) && base != &PyBaseObject_Type && base != &PyDict_Type &&
        base != &PySet_Type && base != &PyFrozenSet_Type && base != &PyList_Type && base != &PyTuple_Type &&
        !is_builtin_dict_class(base))
      unsupported("unsupported_call", "making an instance of " + repr() + " (a " + base->tp_name + ")");
  }
  auto object = ObjectValue::made_new(tracer, type);
  object->class_source = source();
  if (is_dict) object->dict_storage(tracer);
  if (object->is_frozenset_subclass()) {
    // frozenset.__new__ takes the members: __init__ runs on a complete frozenset.
    if (!kwargs.empty()) raise_error("bad_call", PyExc_TypeError, std::string(as_type->tp_name) + "() takes no keyword arguments");
    if (args.size() > 1)
      raise_error("bad_call", PyExc_TypeError, std::string(as_type->tp_name) + " expected at most 1 argument, got " + std::to_string(args.size()));
    ValuePtr made = tracer.wrap(reinterpret_cast<PyObject*>(&PySet_Type), nullptr)->call(tracer, args, {});
    auto* members = dynamic_cast<SetValue*>(made.get());
    if (members == nullptr) throw InternalError("set() did not make a set");
    object->set_storage(tracer)->assign(members->keys(false).get(), {members});
  } else if (object->is_set_subclass()) {
    object->set_storage(tracer);
  } else if (object->is_tuple_subclass()) {
    // tuple.__new__ takes the items, as frozenset's does.
    if (!kwargs.empty()) raise_error("bad_call", PyExc_TypeError, std::string(as_type->tp_name) + "() takes no keyword arguments");
    if (args.size() > 1)
      raise_error("bad_call", PyExc_TypeError, std::string(as_type->tp_name) + " expected at most 1 argument, got " + std::to_string(args.size()));
    ValuePtr made = tracer.wrap(reinterpret_cast<PyObject*>(&PyTuple_Type), nullptr)->call(tracer, args, {});
    auto items = made->unpack(tracer);
    if (!items) throw InternalError("tuple() did not make a tuple");
    object->sequence_storage(tracer)->items = *items;
  } else if (object->is_list_subclass()) {
    object->sequence_storage(tracer);
  }
  PyObject* init = type_lookup(type, "__init__");
  if (init != nullptr && PyFunction_Check(init)) {
    Args all{object};
    all.insert(all.end(), args.begin(), args.end());
    tracer.wrap_user_function(init, guards::class_attr_source(type, "__init__"))->call(tracer, all, kwargs);
    if (!is_dict && !object->has_set_storage() && !object->has_sequence_storage())
      object->construction = ObjectValue::Construction{args, kwargs, object->attrs, tracer.torch_state_before.size(),
                                                       tracer.grad_modes_before.size()};
  } else if (is_dict) {
    Args items_args = args;
    if (is_default_dict(type)) {
      // defaultdict(default_factory=None, *args, **kwargs): the rest are dict()'s.
      ValuePtr factory = args.empty() ? ConstantValue::none() : args[0];
      if (!factory->is_constant() || factory->constant() != Py_None) {
        PyObject* factory_type = factory->python_type();
        bool callable = factory_type && reinterpret_cast<PyTypeObject*>(factory_type)->tp_call;
        if (!callable) raise_error("bad_call", PyExc_TypeError, "first argument must be callable or None");
      }
      object->generic_set_attr(tracer, "default_factory", factory);
      if (!items_args.empty()) items_args.erase(items_args.begin());
    }
    ValuePtr items = tracer.wrap(reinterpret_cast<PyObject*>(&PyDict_Type), nullptr)->call(tracer, items_args, kwargs);
    auto* dict = dynamic_cast<DictValue*>(items.get());
    if (dict == nullptr) throw InternalError("dict() did not make a dict");
    std::shared_ptr<DictValue> storage = object->dict_storage(tracer);
    storage->keys.clear();
    storage->values.clear();
    for (size_t i = 0; i < dict->keys.size(); ++i) storage->set_item(dict->keys[i].get(), dict->values[i]);
  } else if (object->is_set_subclass()) {
    if (!object->is_frozenset_subclass()) call_set_base_method(tracer, object, "__init__", args);
  } else if (object->is_list_subclass()) {
    if (!kwargs.empty()) raise_error("bad_call", PyExc_TypeError, "list() takes no keyword arguments");
    call_base_method(tracer, object, "__init__", args);
  } else if (object->is_tuple_subclass()) {
    // Made by tuple.__new__ above; object.__init__ ignores the arguments.
  } else if (!args.empty() || !kwargs.empty()) {
    raise_error("bad_call", PyExc_TypeError, repr() + "() takes no arguments");
  }
  return object;
}

}  // namespace bytegraph::trace
