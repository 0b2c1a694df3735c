// Python builtins and pure functions (math.*, operator.*, methods of constants). Most fold
// on constant arguments; a few (len, isinstance, enumerate, zip, ...) understand symbolic
// containers and tensors.
#include <cstring>
#include <unordered_map>

#include "python/type_dict.h"

#include "python/import.h"
#include "trace/operators.h"
#include "trace/values/builtin_iteration.h"
#include "trace/values/deque.h"
#include "trace/values/exceptions.h"
#include "trace/values/generators.h"
#include "trace/values/length_hint.h"
#include "trace/values/torch_function.h"
#include "trace/values/number_protocol.h"
#include "trace/values/partial.h"
#include "trace/values/sets.h"
#include "trace/values/strings.h"
#include "trace/symbolic.h"
#include "trace/tracer.h"

namespace bytegraph::trace {

namespace {

// Builtins safe to run for real on constant arguments (no I/O, no mutation of anything).
bool foldable_builtin(PyObject* function) {
  static const char* names[] = {"abs", "min", "max", "sum", "round", "divmod", "pow", "len", "int",
                                "float", "bool", "str", "tuple", "range", "sorted", "any", "all",
                                "repr", "ord", "chr", "isinstance", "issubclass", "hash", "slice",
                                "list", "reversed", "complex", "format", "type", "callable"};
  for (const char* name : names)
    if (builtin_object(name) == function) return true;
  return false;
}

bool is_pure_module_function(PyObject* function) {
  if (PyObject_TypeCheck(function, &PyMethodDescr_Type)) {
    // str.upper, bytes.hex, int.bit_length: methods of immutable builtin types.
    PyTypeObject* owner = reinterpret_cast<PyDescrObject*>(function)->d_type;
    return owner == &PyUnicode_Type || owner == &PyBytes_Type || owner == &PyLong_Type ||
           owner == &PyFloat_Type || owner == &PyComplex_Type || owner == &PyTuple_Type || owner == &PyFrozenSet_Type;
  }
  if (!PyCFunction_Check(function)) return false;
  PyObject* self = PyCFunction_GET_SELF(function);  // borrowed
  if (self == nullptr) return false;
  if (!PyModule_Check(self)) return true;  // a method of a constant object ("a,b".split)
  const char* name = PyModule_GetName(self);
  if (name == nullptr) {
    PyErr_Clear();
    return false;
  }
  return std::strcmp(name, "math") == 0 || std::strcmp(name, "_operator") == 0 ||
         std::strcmp(name, "operator") == 0;
}

ValuePtr make_int(long value) { return ConstantValue::make(check(PyLong_FromLong(value))); }
Args unpack_or_fail(Tracer& tracer, const ValuePtr& value, const char* what) {
  auto items = value->unpack(tracer);
  if (!items) unsupported("unsupported_call", std::string(what) + " of " + value->repr());
  return *items;
}

// The class object(s) a value stands for, for isinstance.
py::Ref<> class_object(Tracer& tracer, const ValuePtr& value) {
  if (PyObject* real = value->real_object()) return py::Ref<>::newref(real);
  if (value->is_constant()) return py::Ref<>::newref(value->constant());
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get())) {
    py::Ref<> tuple = check(PyTuple_New(static_cast<Py_ssize_t>(seq->items.size())));
    for (size_t i = 0; i < seq->items.size(); ++i)
      PyTuple_SET_ITEM(tuple.get(), i, class_object(tracer, seq->items[i]).release());
    return tuple;
  }
  unsupported("unsupported_call", "isinstance with class " + value->repr());
}

// locals() of the frame being traced: a new dict of its bound variables (cells by their
// contents), in CPython's order; what the trace stored is what it holds.
ValuePtr frame_locals(Tracer& tracer) {
  const FrameState& frame = *tracer.frames.back();
  auto dict = std::make_shared<DictValue>();
  const auto& names = frame.code->localsplus_names;
  for (size_t i = 0; i < names.size() && i < frame.locals.size(); ++i) {
    ValuePtr value = frame.locals[i];
    if (auto* cell = dynamic_cast<CellValue*>(value.get())) value = cell->contents;
    if (!value || value->is_null()) continue;
    dict->set_item(check(PyUnicode_FromString(names[i].c_str())).get(), value);
  }
  return dict;
}

ValuePtr call_len(Tracer& tracer, const ValuePtr& value) {
  if (value->is_constant()) return fold(builtin_object("len"), {value});
  if (auto* dict = dynamic_cast<DictValue*>(value.get())) return make_int(static_cast<long>(dict->keys.size()));
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get())) return make_int(static_cast<long>(seq->items.size()));
  if (auto* deque = dynamic_cast<DequeValue*>(value.get())) return make_int(static_cast<long>(deque->storage->items.size()));
  if (auto* set = dynamic_cast<SetValue*>(value.get())) return make_int(static_cast<long>(set->size()));
  if (auto* tensor = dynamic_cast<TensorValue*>(value.get())) {
    py::Ref<> ndim = check(PyObject_GetAttrString(tensor->fake(), "ndim"));
    if (PyLong_AsLong(ndim.get()) > 0) return tensor_size(tracer, value, 0);  // symbolic or not
    py::Ref<> length = check(PyObject_CallOneArg(builtin_object("len"), tensor->fake()));
    return ConstantValue::make(std::move(length));
  }
  // A class's own __len__ is traced, so what it reads is guarded where it comes from.
  if (auto* object = dynamic_cast<ObjectValue*>(value.get())) {
    if (ValuePtr length = object->inline_special(tracer, "__len__", {})) return length;
    if (ValuePtr items = object->builtin_items(tracer)) return call_len(tracer, items);
  }
  if (PyObject* real = value->real_object()) {
    if (PyObject_HasAttrString(real, "__len__")) {
      py::Ref<> length = check(PyObject_CallOneArg(builtin_object("len"), real));
      // A module container (ModuleList, Sequential, ModuleDict) can grow before the next call.
      if (auto* module = dynamic_cast<ModuleValue*>(value.get())) {
        module->guard_children(tracer);
      } else if (value->source()) {
        // Any other object from outside (a deque) can change size before the next call.
        tracer.guards.add(GuardLog::Kind::Size, value->source(), nullptr, PyLong_AsSsize_t(length.get()));
      }
      return ConstantValue::make(std::move(length));
    }
  }
  return make_int(static_cast<long>(unpack_or_fail(tracer, value, "len").size()));
}

ValuePtr call_isinstance(Tracer& tracer, const Args& args) {
  PyObject* type = args[0]->python_type();
  if (type == nullptr) unsupported("unsupported_call", "isinstance of " + args[0]->repr());
  py::Ref<> classes = class_object(tracer, args[1]);
  int result = PyObject_IsSubclass(type, classes.get());
  check_status(result);
  return make_bool(result == 1);
}

// Values of builtin types without an instance dict (containers, views, generators, functions
// made in the trace): their attributes are their type's.
PyObject* attributes_from_type(const ValuePtr& value) {
  if (value->real_object() || value->is_constant() || value->is_tensor()) return nullptr;
  auto* type = reinterpret_cast<PyTypeObject*>(value->python_type());
  if (type == nullptr || (type->tp_flags & Py_TPFLAGS_HEAPTYPE)) return nullptr;
  return type->tp_dictoffset == 0 || type == &PyFunction_Type ? (PyObject*)type : nullptr;
}

// Whether instances of `type` have attribute `name` from their class: looked up through the
// MRO, as instance attribute access does (getattr on the class itself would also find the
// metaclass's, such as the class's own __name__).
bool type_has(PyObject* type, PyObject* name) {
  return _PyType_Lookup(reinterpret_cast<PyTypeObject*>(type), name) != nullptr;
}

// The attribute, or null where reading it raises AttributeError. Symbolic objects and modules
// read it symbolically (their guards then say why it is missing); other values only say
// whether the real object has it, where that cannot change (classes, modules, functions are
// pinned by identity).
ValuePtr attribute_or_null(Tracer& tracer, const ValuePtr& owner, const std::string& name) {
  if (dynamic_cast<ObjectValue*>(owner.get()) || dynamic_cast<ModuleValue*>(owner.get())) {
    try {
      return owner->get_attr(tracer, name);
    } catch (const Raised& raised) {
      // getattr(obj, name, default) swallows AttributeError wherever it came from (a property,
      // __getattr__), as Python does.
      if (raised.is_a(PyExc_AttributeError)) return nullptr;
      throw;
    }
  }
  if (PyObject* real = owner->real_object()) {
    tracer.pin_identity(owner);
    if (!PyObject_HasAttrString(real, name.c_str())) {
      // Absent now: classes, functions and namespaces can be given it before the next call.
      if (owner->source()) tracer.guards.add(GuardLog::Kind::LacksAttr, owner->source(), check(PyUnicode_FromString(name.c_str())).get());
      return nullptr;
    }
  }
  if (PyObject* type = attributes_from_type(owner); type && !type_has(type, check(PyUnicode_FromString(name.c_str())).get())) return nullptr;
  if (owner->is_constant() && !PyObject_HasAttrString(owner->constant(), name.c_str())) return nullptr;
  if (auto* tensor = dynamic_cast<TensorValue*>(owner.get()); tensor && !PyObject_HasAttrString(tensor->fake(), name.c_str())) {
    // The fake has only what every tensor has; the tensor passed in may carry attributes of
    // its own, now or on a later call.
    if (PyObject* real = tracer.real_tensor(owner)) {
      if (PyObject_HasAttrString(real, name.c_str())) unsupported("unsupported_attribute", "attribute '" + name + "' set on a tensor");
      tracer.guards.add(GuardLog::Kind::LacksAttr, owner->source(), check(PyUnicode_FromString(name.c_str())).get());
    }
    return nullptr;
  }
  return owner->get_attr(tracer, name);
}

ValuePtr call_getattr(Tracer& tracer, const Args& args) {
  if (!args[1]->is_constant() || !PyUnicode_Check(args[1]->constant()))
    unsupported("unsupported_call", "getattr with a non-constant name");
  std::string name = PyUnicode_AsUTF8(args[1]->constant());
  if (args.size() == 3) {
    ValuePtr found = attribute_or_null(tracer, args[0], name);
    return found ? found : args[2];
  }
  return args[0]->get_attr(tracer, name);
}

ValuePtr call_hasattr(Tracer& tracer, const Args& args) {
  if (!args[1]->is_constant() || !PyUnicode_Check(args[1]->constant()))
    unsupported("unsupported_call", "hasattr with a non-constant name");
  if (args[0]->real_object() || dynamic_cast<ObjectValue*>(args[0].get()))
    return make_bool(attribute_or_null(tracer, args[0], PyUnicode_AsUTF8(args[1]->constant())) != nullptr);
  if (args[0]->is_constant()) return make_bool(PyObject_HasAttr(args[0]->constant(), args[1]->constant()));
  if (dynamic_cast<TensorValue*>(args[0].get()))
    return make_bool(attribute_or_null(tracer, args[0], PyUnicode_AsUTF8(args[1]->constant())) != nullptr);
  if (PyObject* type = attributes_from_type(args[0])) return make_bool(type_has(type, args[1]->constant()));
  // A partial made in the trace has what its type gives every partial (its instance dict
  // starts empty and the trace never writes it).
  if (dynamic_cast<PartialValue*>(args[0].get()) && !args[0]->source())
    return make_bool(type_has(args[0]->python_type(), args[1]->constant()));
  try {
    args[0]->get_attr(tracer, PyUnicode_AsUTF8(args[1]->constant()));
    return make_bool(true);
  } catch (const Raised& raised) {
    if (raised.is_a(PyExc_AttributeError)) return make_bool(false);
    unsupported("unsupported_call", "hasattr on " + args[0]->repr());
  } catch (const Unsupported&) {
    unsupported("unsupported_call", "hasattr on " + args[0]->repr());
  }
}

// dict.fromkeys(iterable, value=None) over symbolic items: a new dict of constant keys.
ValuePtr call_dict_fromkeys(Tracer& tracer, const Args& args) {
  std::optional<Args> keys = args[0]->is_iterator() ? std::optional<Args>(drain(tracer, *args[0])) : args[0]->unpack(tracer);
  if (!keys) unsupported("unsupported_iteration", "dict.fromkeys over " + args[0]->repr());
  ValuePtr value = args.size() == 2 ? args[1] : ConstantValue::none();
  auto dict = std::make_shared<DictValue>();
  for (const ValuePtr& key : *keys) {
    dict->set_item(dict_key(tracer, key, "unsupported_dict").get(), value);
  }
  return dict;
}

bool is_dict_fromkeys(PyObject* function) {
  if (!PyCFunction_Check(function) || PyCFunction_GET_SELF(function) != reinterpret_cast<PyObject*>(&PyDict_Type)) return false;
  return std::strcmp(reinterpret_cast<PyCFunctionObject*>(function)->m_ml->ml_name, "fromkeys") == 0;
}

// cls.fromkeys(iterable[, value]) of a dict class other than dict (OrderedDict, defaultdict, a
// subclass): as CPython does it, cls() and then cls's __setitem__ for each key.
ValuePtr call_subclass_fromkeys(Tracer& tracer, PyObject* function, const Args& args, const KwArgs& kwargs) {
  if (!PyCFunction_Check(function) || std::strcmp(reinterpret_cast<PyCFunctionObject*>(function)->m_ml->ml_name, "fromkeys") != 0)
    return nullptr;
  PyObject* cls = PyCFunction_GET_SELF(function);
  if (cls == nullptr || !PyType_Check(cls) || cls == (PyObject*)&PyDict_Type ||
      !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), &PyDict_Type))
    return nullptr;
  ValuePtr value = args.size() == 2 ? args[1] : ConstantValue::none();
  for (const auto& [name, given] : kwargs) {
    if (name != "value" || args.size() != 1) unsupported("unsupported_call", "fromkeys() with these arguments");
    value = given;
  }
  if (args.empty() || args.size() > 2) raise_error("bad_call", PyExc_TypeError, "fromkeys expected 1 or 2 arguments");
  std::optional<Args> keys = args[0]->is_iterator() ? std::optional<Args>(drain(tracer, *args[0])) : args[0]->unpack(tracer);
  if (!keys) unsupported("unsupported_iteration", "fromkeys over " + args[0]->repr());
  ValuePtr made = tracer.wrap(cls, guards::class_source(cls))->call(tracer, {}, {});
  auto* object = dynamic_cast<ObjectValue*>(made.get());
  if (object == nullptr) unsupported("unsupported_call", "fromkeys of " + py_repr(cls));
  for (const ValuePtr& key : *keys) object->set_item(tracer, key, value);
  return made;
}

ValuePtr call_issubclass(Tracer& tracer, const Args& args) {
  PyObject* cls = args[0]->is_constant() ? args[0]->constant() : args[0]->real_object();
  if (cls == nullptr || !PyType_Check(cls)) unsupported("unsupported_call", "issubclass of " + args[0]->repr());
  py::Ref<> classes = class_object(tracer, args[1]);
  int result = PyObject_IsSubclass(cls, classes.get());
  check_status(result);
  return make_bool(result == 1);
}

// callable(x): decided by the type (tp_call), known for every kind the tracer calls.
ValuePtr call_callable(const ValuePtr& value) {
  if (value->is_constant()) return make_bool(PyCallable_Check(value->constant()));
  if (value->is_tensor()) return make_bool(false);
  if (PyObject* real = value->real_object()) return make_bool(PyCallable_Check(real));
  if (value->bound_attribute().first || dynamic_cast<UserFunctionValue*>(value.get()) ||
      dynamic_cast<BoundMethodValue*>(value.get()))
    return make_bool(true);
  if (PyObject* type = value->python_type()) return make_bool(reinterpret_cast<PyTypeObject*>(type)->tp_call != nullptr);
  unsupported("unsupported_call", "callable() of " + value->repr());
}

// zip(*iterables, strict=False) over known items. With strict=True and lengths that differ,
// CPython raises only once the short one runs out, which depends on how far the caller
// iterates: a break.
ValuePtr call_zip(Tracer& tracer, const Args& args, bool strict) {
  std::vector<Args> columns;
  size_t length = SIZE_MAX;
  for (const auto& arg : args) {
    columns.push_back(unpack_or_fail(tracer, arg, "zip"));
    length = std::min(length, columns.back().size());
  }
  if (columns.empty()) length = 0;
  for (size_t i = 1; strict && i < columns.size(); ++i)
    if (columns[i].size() != columns[0].size()) unsupported("unsupported_call", "zip(strict=True) over iterables of different lengths");
  Args rows;
  for (size_t i = 0; i < length; ++i) {
    Args row;
    for (auto& column : columns) row.push_back(column[i]);
    rows.push_back(std::make_shared<SequenceValue>(false, std::move(row)));
  }
  return std::make_shared<IteratorValue>(std::move(rows));
}

// min/max/sum over symbolic items (tensors included: sum records additions).
ValuePtr reduce_items(Tracer& tracer, const char* which, const Args& args) {
  const bool is_sum = std::strcmp(which, "sum") == 0;
  if (args.empty() || (is_sum && args.size() > 2)) unsupported("unsupported_call", std::string(which) + " arguments");
  // sum(iterable[, start]); min/max(iterable) or min/max(a, b, ...).
  Args items = (args.size() == 1 || is_sum) ? unpack_or_fail(tracer, args[0], which) : args;
  if (all_constant(items) && (args.size() == 1 || !is_sum)) {
    auto list = std::make_shared<SequenceValue>(true, items);
    py::Ref<> real = list->as_graph_arg(tracer, ArgMode::Graph);
    return ConstantValue::make(check(PyObject_CallOneArg(builtin_object(which), real.get())));
  }
  if (is_sum) {
    ValuePtr total = args.size() > 1 ? args[1] : make_int(0);
    for (const auto& item : items) total = apply_operator(tracer, operator_function("add"), {total, item});
    return total;
  }
  unsupported("unsupported_call", std::string(which) + " over non-constant values");
}

// tuple.__new__(cls[, iterable]) (which namedtuple's _make calls) and list.__new__(cls): a tuple
// of class cls (a named tuple class, a subclass, tuple itself) or an empty list of class cls
// whose __init__ has not run; null for other calls.
ValuePtr call_sequence_new(Tracer& tracer, PyObject* function, const Args& args, const KwArgs& kwargs) {
  if (!PyCFunction_Check(function) || std::strcmp(reinterpret_cast<PyCFunctionObject*>(function)->m_ml->ml_name, "__new__") != 0)
    return nullptr;
  PyObject* owner = PyCFunction_GET_SELF(function);
  const bool is_list = owner == (PyObject*)&PyList_Type;
  if (owner != (PyObject*)&PyTuple_Type && !is_list) return nullptr;
  if (args.empty() || (!is_list && args.size() > 2) || !kwargs.empty()) return nullptr;
  PyObject* type = args[0]->real_object();
  if (type == nullptr || !PyType_Check(type) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type), reinterpret_cast<PyTypeObject*>(owner)))
    return nullptr;
  const bool plain = type == owner;
  Args items = is_list || args.size() == 1 ? Args{} : unpack_or_fail(tracer, args[1], "tuple.__new__");
  if (plain || named_tuple_fields(type)) {
    auto made = std::make_shared<SequenceValue>(is_list, std::move(items));
    if (!plain) made->tuple_type = py::Ref<>::newref(type);
    return made;
  }
  auto object = ObjectValue::made_new(tracer, type);
  object->class_source = args[0]->source();
  object->sequence_storage(tracer)->items = std::move(items);
  return object;
}

ValuePtr call_constructor(Tracer& tracer, PyObject* function, const Args& args, const KwArgs& kwargs) {
  if (function == builtin_object("tuple") || function == builtin_object("list")) {
    bool is_list = function == builtin_object("list");
    Args items = args.empty() ? Args{} : unpack_or_fail(tracer, args[0], is_list ? "list" : "tuple");
    return std::make_shared<SequenceValue>(is_list, std::move(items));
  }
  if (ValuePtr made = call_sequence_new(tracer, function, args, kwargs)) return made;
  if (function == builtin_object("dict")) {
    auto dict = std::make_shared<DictValue>();
    if (!args.empty()) {
      ValuePtr source = args[0];
      // A dict subclass instance (a defaultdict, an OrderedDict) is a mapping: its items. One
      // that overrides keys() or __getitem__ in Python is read through them instead, as dict() does.
      if (auto* object = dynamic_cast<ObjectValue*>(source.get());
          object && !object->overrides("keys") && !object->overrides("__getitem__") && !object->overrides("__iter__"))
        if (ValuePtr items = object->builtin_items(tracer); items && dynamic_cast<DictValue*>(items.get())) source = items;
      if (!dynamic_cast<DictValue*>(source.get()))
        if (auto read = mapping_items(tracer, source)) source = read;
      if (auto* other = dynamic_cast<DictValue*>(source.get())) {
        for (size_t i = 0; i < other->keys.size(); ++i) dict->set_item(other->keys[i].get(), other->values[i]);
      } else {
        for (const auto& pair : unpack_or_fail(tracer, source, "dict")) {
          auto kv = unpack_or_fail(tracer, pair, "dict item");
          if (kv.size() != 2) unsupported("unsupported_call", "dict() of " + pair->repr());
          dict->set_item(dict_key(tracer, kv[0], "unsupported_dict").get(), kv[1]);
        }
      }
    }
    for (const auto& [name, value] : kwargs) dict->set_item(check(PyUnicode_FromString(name.c_str())).get(), value);
    return dict;
  }
  return nullptr;
}

// super() reads the calling frame's __class__ cell and first argument, as CPython does.
ValuePtr call_super(Tracer& tracer, const Args& args) {
  if (args.size() == 2) {
    PyObject* cls = args[0]->real_object();
    if (!cls || !PyType_Check(cls)) unsupported("unsupported_call", "super() with class " + args[0]->repr());
    return std::make_shared<SuperValue>(py::Ref<>::newref(cls), args[1]);
  }
  if (!args.empty() || tracer.frames.empty()) unsupported("unsupported_call", "super() with these arguments");
  FrameState& frame = *tracer.frames.back();
  const auto& names = frame.code->localsplus_names;
  ValuePtr cls, self;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] != "__class__" || !frame.locals[i]) continue;
    if (auto* cell = dynamic_cast<CellValue*>(frame.locals[i].get())) cls = cell->contents;
  }
  if (frame.code->argcount > 0 && frame.locals[0]) {
    self = frame.locals[0];
    if (auto* cell = dynamic_cast<CellValue*>(self.get())) self = cell->contents;
  }
  if (!cls || !self || !cls->real_object() || !PyType_Check(cls->real_object()))
    unsupported("unsupported_call", "super() outside a method");
  return std::make_shared<SuperValue>(py::Ref<>::newref(cls->real_object()), self);
}

}  // namespace

std::string SuperValue::repr() const {
  return "SuperVariable(" + std::string(reinterpret_cast<PyTypeObject*>(cls_.get())->tp_name) + ", " + self_->repr() + ")";
}

ValuePtr SuperValue::get_attr(Tracer& tracer, const std::string& name) {
  // super(C, obj) walks type(obj)'s MRO; super(C, cls), as in a classmethod, walks cls's own.
  PyObject* self_class = self_->real_object();
  const bool bound_to_class = self_class && PyType_Check(self_class) &&
                              PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(self_class), reinterpret_cast<PyTypeObject*>(cls_.get()));
  PyObject* type = bound_to_class ? self_class : self_->python_type();
  if (type == nullptr) unsupported("unsupported_attribute", repr() + "." + name);
  // What a classmethod found on the way binds to: the class super() was given, or obj's class.
  auto receiver_class = [&]() -> ValuePtr {
    if (bound_to_class) return self_;
    return tracer.wrap(type, self_->source() ? guards::type_source(self_->source()) : guards::class_source(type));
  };
  PyObject* mro = reinterpret_cast<PyTypeObject*>(type)->tp_mro;  // borrowed tuple
  Py_ssize_t n = PyTuple_GET_SIZE(mro), start = 0;
  while (start < n && PyTuple_GET_ITEM(mro, start) != cls_.get()) ++start;
  for (Py_ssize_t i = start + 1; i < n; ++i) {
    PyObject* owner = PyTuple_GET_ITEM(mro, i);
    PyObject* found = py::own_type_attribute(reinterpret_cast<PyTypeObject*>(owner), name.c_str());  // borrowed
    if (found == nullptr) continue;
    // Guarded where the base class holds it: a method patched there is another function.
    guards::SourcePtr found_source = guards::class_attr_source(owner, name);
    if (PyFunction_Check(found)) {
      ValuePtr function = tracer.wrap_user_function(found, found_source);
      return bound_to_class ? function : std::make_shared<BoundMethodValue>(function, self_);
    }
    if (Py_TYPE(found) == &PyStaticMethod_Type || Py_TYPE(found) == &PyClassMethod_Type) {
      py::Ref<> function = check(PyObject_GetAttrString(found, "__func__"));
      if (PyFunction_Check(function.get())) {
        // The source reads the class attribute as Python does: a staticmethod gives the
        // function, a classmethod a method whose __func__ it is.
        if (Py_TYPE(found) == &PyStaticMethod_Type) return tracer.wrap_user_function(function.get(), found_source);
        ValuePtr wrapped = is_default_torch_function(function.get())
                               ? ValuePtr(std::make_shared<DefaultTorchFunctionValue>(function.copy()))
                               : tracer.wrap_user_function(function.get(), guards::attr_source(found_source, "__func__"));
        return std::make_shared<BoundMethodValue>(wrapped, receiver_class());
      }
      // A C classmethod (dict.fromkeys): bound to the class it is read for, as the descriptor does.
      py::Ref<> bound = check(Py_TYPE(found)->tp_descr_get(found, nullptr, type));
      return tracer.wrap(bound.get(), nullptr);
    }
    if (bound_to_class) unsupported("unsupported_attribute", repr() + "." + name + " read through a class");
    if (PyObject_TypeCheck(found, &PyProperty_Type)) {
      py::Ref<> getter = check(PyObject_GetAttrString(found, "fget"));
      guards::SourcePtr getter_source = guards::attr_source(found_source, "fget");
      if (PyFunction_Check(getter.get())) return tracer.wrap_user_function(getter.get(), getter_source)->call(tracer, {self_}, {});
    }
    // A method of object or of a builtin base (object.__setattr__, OrderedDict.__setitem__):
    // applied to the symbolic object.
    if (auto object = std::dynamic_pointer_cast<ObjectValue>(self_); object && !PyType_HasFeature(reinterpret_cast<PyTypeObject*>(owner), Py_TPFLAGS_HEAPTYPE))
      return std::make_shared<ObjectSlotValue>(object, name);
    if (name == "__init__" && owner == reinterpret_cast<PyObject*>(&PyBaseObject_Type))
      return std::make_shared<FoldedCallValue>(py::Ref<>::newref(found), py::Ref<>::newref(Py_None), nullptr);
    unsupported("unsupported_attribute", repr() + "." + name + " is not a Python function");
  }
  unsupported("unsupported_attribute", repr() + " has no attribute '" + name + "'");
}

std::string BuiltinValue::repr() const {
  py::Ref<> name = py::Ref<>::steal(PyObject_GetAttrString(function_.get(), "__name__"));
  if (!name) PyErr_Clear();
  return "BuiltinVariable(" + (name ? py_str(name.get()) : py_repr(function_.get())) + ")";
}

namespace {

// object.__setattr__(obj, ...), dict.__setitem__(obj, ...): a method of object or of a builtin
// base called with a symbolic object as its first argument.
ValuePtr call_on_object(Tracer& tracer, PyObject* function, const Args& args, const KwArgs& kwargs) {
  if (args.empty()) return nullptr;
  if (!PyObject_TypeCheck(function, &PyWrapperDescr_Type) && !PyObject_TypeCheck(function, &PyMethodDescr_Type))
    return nullptr;
  PyTypeObject* owner = reinterpret_cast<PyDescrObject*>(function)->d_type;
  PyObject* type = args[0]->python_type();
  if (type == nullptr || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type), owner)) return nullptr;
  py::Ref<> name = check(PyObject_GetAttrString(function, "__name__"));
  Args rest(args.begin() + 1, args.end());
  if (auto object = std::dynamic_pointer_cast<ObjectValue>(args[0]))
    return ObjectSlotValue(object, PyUnicode_AsUTF8(name.get())).call(tracer, rest, kwargs);
  // set.union(s, t), set.__or__(s, t): the method of the symbolic set itself.
  if (auto set = std::dynamic_pointer_cast<SetValue>(args[0])) return call_set_method(tracer, set, PyUnicode_AsUTF8(name.get()), rest);
  if (args[0]->is_constant() && PyFrozenSet_Check(args[0]->constant())) {
    // frozenset.union(constant, a symbolic set): the constant as a symbolic frozenset.
    auto frozen = std::make_shared<SetValue>(true);
    frozen->assign(args[0]->constant(), {});
    return call_set_method(tracer, frozen, PyUnicode_AsUTF8(name.get()), rest);
  }
  return nullptr;
}

}  // namespace

ValuePtr BuiltinValue::get_item(Tracer& tracer, const ValuePtr& key) {
  if (ValuePtr alias = class_subscript(tracer, function_.get(), key)) return alias;
  return Value::get_item(tracer, key);
}

ValuePtr BuiltinValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  PyObject* function = function_.get();
  if (is_exception_class(function)) return make_exception(tracer, function, args, kwargs);
  if (ValuePtr result = call_on_object(tracer, function, args, kwargs)) return result;
  if (function == builtin_object("setattr") && args.size() == 3 && args[1]->is_constant() && PyUnicode_Check(args[1]->constant())) {
    args[0]->set_attr(tracer, PyUnicode_AsUTF8(args[1]->constant()), args[2]);
    return ConstantValue::none();
  }
  if (function == builtin_object("delattr") && args.size() == 2 && args[1]->is_constant() && PyUnicode_Check(args[1]->constant())) {
    args[0]->del_attr(tracer, PyUnicode_AsUTF8(args[1]->constant()));
    return ConstantValue::none();
  }
  if (function == builtin_object("print")) unsupported("print", "print() has a side effect outside the graph");
  if ((function == builtin_object("locals") || function == builtin_object("vars")) && args.empty() && kwargs.empty())
    return frame_locals(tracer);
  if (function == builtin_object("dir") && args.empty()) unsupported("frame_introspection", "dir() lists the calling frame's names");
  // bool(t) is t.__bool__(): a decision on the tensor's value, as `if t:` is.
  if (function == builtin_object("bool") && args.size() == 1 && kwargs.empty() && args[0]->is_tensor())
    return make_bool(args[0]->truthy(tracer));
  if ((function == builtin_object("int") || function == builtin_object("float")) && args.size() == 1 && kwargs.empty() &&
      args[0]->is_tensor() && tracer.shapes->captures_scalar_outputs())
    return symbolic_builtin(tracer, *this, function, {scalar_output(tracer, args[0])}, {});
  if (ValuePtr result = symbolic_builtin(tracer, *this, function, args, kwargs)) return result;
  // Before folding: a constant of a user class (an int subclass) has Python methods to inline.
  if (ValuePtr result = call_number_builtin(tracer, function, args, kwargs)) return result;
  if (function == operator_function("length_hint")) return call_length_hint(tracer, args, kwargs);
  if (function == builtin_object("len") && args.size() == 1) return call_len(tracer, args[0]);
  if (function == builtin_object("isinstance") && args.size() == 2) return call_isinstance(tracer, args);
  if (function == builtin_object("getattr") && (args.size() == 2 || args.size() == 3)) return call_getattr(tracer, args);
  if (function == builtin_object("hasattr") && args.size() == 2) return call_hasattr(tracer, args);
  if ((args.size() == 1 || args.size() == 2) && kwargs.empty() && !all_constant(args) && is_dict_fromkeys(function))
    return call_dict_fromkeys(tracer, args);
  if (ValuePtr made = call_subclass_fromkeys(tracer, function, args, kwargs)) return made;
  if (ValuePtr made = call_deque(tracer, function, args, kwargs)) return made;
  if (function == builtin_object("issubclass") && args.size() == 2 && kwargs.empty()) return call_issubclass(tracer, args);
  if (function == builtin_object("callable") && args.size() == 1 && kwargs.empty()) return call_callable(args[0]);
  if (function == builtin_object("id")) {
    // An object the frame reaches (a module, a config, a function) is pinned by an identity
    // guard, so its address is a constant of this entry; anything made per call is not.
    if (args.size() == 1 && kwargs.empty() && args[0]->source() && args[0]->real_object()) {
      tracer.pin_identity(args[0]);
      return ConstantValue::make(check(PyLong_FromVoidPtr(args[0]->real_object())));
    }
    unsupported("unsupported_builtin", "id() of " + (args.empty() ? std::string("nothing") : args[0]->repr()) +
                                           " is its address at run time");
  }
  if ((function == builtin_object("str") || function == builtin_object("repr") || function == builtin_object("ascii")) && args.size() == 1 &&
      kwargs.empty() && !all_constant(args))
    return stringify(tracer, args[0], function == builtin_object("str") ? 's' : function == builtin_object("repr") ? 'r' : 'a');
  if (function == builtin_object("format") && (args.size() == 1 || args.size() == 2) && kwargs.empty() && !all_constant(args))
    return format_value(tracer, args[0], args.size() == 2 ? args[1] : nullptr);
  if (ValuePtr result = call_iteration_builtin(tracer, function, args, kwargs)) return result;
  if (function == builtin_object("zip") && (kwargs.empty() || (kwargs.size() == 1 && kwargs[0].first == "strict"))) {
    const ValuePtr strict = kwargs.empty() ? nullptr : kwargs[0].second;
    if (strict && !strict->is_constant()) unsupported("unsupported_call", "zip(strict=" + strict->repr() + ")");
    return call_zip(tracer, args, strict && PyObject_IsTrue(strict->constant()) == 1);
  }
  if (function == builtin_object("super")) return call_super(tracer, args);
  if (function == builtin_object("type") && args.size() == 1 && args[0]->python_type()) {
    // With a source, so what the code reads from the class (`type(obj).scale`) is guarded.
    PyObject* type = args[0]->python_type();
    return tracer.wrap(type, args[0]->source() ? guards::type_source(args[0]->source()) : guards::class_source(type));
  }
  if (all_constant(args, kwargs) && (pure_ || foldable_builtin(function) || is_pure_module_function(function))) {
    // torch's autocast queries answer from settings the global-state guard compares only
    // while autocast is on; a trace that read them needs them compared always.
    if (pure_ && PyCFunction_Check(function) && std::strstr(reinterpret_cast<PyCFunctionObject*>(function)->m_ml->ml_name, "autocast"))
      tracer.read_autocast_settings = true;
    return fold(function, args, kwargs);
  }
  if ((function == builtin_object("min") || function == builtin_object("max") || function == builtin_object("sum")) && kwargs.empty())
    return reduce_items(tracer, function == builtin_object("min") ? "min" : function == builtin_object("max") ? "max" : "sum", args);
  if (function == builtin_object("sum") && args.size() == 1 && kwargs.size() == 1 && kwargs[0].first == "start")
    return reduce_items(tracer, "sum", {args[0], kwargs[0].second});  // sum(xs, start=s)
  if (ValuePtr built = call_constructor(tracer, function, args, kwargs)) return built;
  if (function == builtin_object("abs") && args.size() == 1 && args[0]->is_tensor())
    return tracer.record(graph::Op::CallFunction, function_.copy(), args, kwargs);
  // operator.sub(a, b) is `a - b`: the operands' special methods, NotImplemented and all.
  if (kwargs.empty() && (args.size() == 1 || args.size() == 2) && is_protocol_operator(function))
    return apply_operator(tracer, function, args);
  if (is_pure_module_function(function) && PyModule_Check(PyCFunction_GET_SELF(function))) {
    // operator.add(x, y) and friends on tensors are graph operations.
    for (const auto& arg : args)
      if (arg->is_tensor()) return tracer.record(graph::Op::CallFunction, function_.copy(), args, kwargs);
  }
  unsupported("unsupported_builtin", "calling " + repr() + " with these arguments");
}

}  // namespace bytegraph::trace
