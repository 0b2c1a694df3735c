// Values of the trace as dict keys and set members: see values/keys.h.
#include "trace/values/keys.h"

#include "trace/operators.h"
#include "trace/tracer.h"
#include "trace/values/exceptions.h"
#include "trace/values/sets.h"

namespace bytegraph::trace {

bool hashed_by_identity(PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  // Builtin functions hash and compare by their module and definition.
  if (PyCFunction_CheckExact(object)) return PyCFunction_GET_SELF(object) == nullptr || PyModule_Check(PyCFunction_GET_SELF(object));
  bool identity_hash = type->tp_hash == PyBaseObject_Type.tp_hash || type->tp_hash == PyType_Type.tp_hash;
  bool identity_eq = type->tp_richcompare == PyBaseObject_Type.tp_richcompare ||
                     type->tp_richcompare == PyType_Type.tp_richcompare;
  return identity_hash && identity_eq;
}

bool enum_member(PyObject* object) {
  PyTypeObject* type = Py_TYPE(object);
  // Compared and hashed by C code (pybind11's), never a Python override.
  for (const char* slot : {"__eq__", "__hash__"}) {
    py::Ref<> name = check(PyUnicode_FromString(slot));
    PyObject* method = _PyType_Lookup(type, name.get());  // borrowed
    if (!method || PyFunction_Check(method)) return false;
  }
  py::Ref<> members = py::Ref<>::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__members__"));
  if (!members || !PyDict_Check(members.get())) {
    PyErr_Clear();
    return false;
  }
  PyObject *name, *member;  // borrowed
  Py_ssize_t position = 0;
  while (PyDict_Next(members.get(), &position, &name, &member))
    if (member == object) return true;
  return false;
}

bool constant_member(PyObject* item) {
  if (PyUnicode_CheckExact(item) || PyLong_CheckExact(item)) return true;
  if (PyTuple_CheckExact(item)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(item); ++i)
      if (!constant_member(PyTuple_GET_ITEM(item, i))) return false;
    return true;
  }
  return classify(item) == ObjectKind::Constant && !PyAnySet_Check(item);
}

namespace {

// The type name of a value whose class makes it unhashable (__hash__ = None: lists, dicts,
// sets, their subclasses), or null.
const char* unhashable_type(const ValuePtr& value) {
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get()); seq && seq->is_list()) return "list";
  if (dynamic_cast<DictValue*>(value.get())) return "dict";
  if (auto* set = dynamic_cast<SetValue*>(value.get()); set && !set->frozen()) return "set";
  if (auto* object = dynamic_cast<ObjectValue*>(value.get())) {
    auto* type = reinterpret_cast<PyTypeObject*>(object->python_type());
    py::Ref<> name = check(PyUnicode_FromString("__hash__"));
    if (_PyType_Lookup(type, name.get()) == Py_None) return type->tp_name;
  }
  return nullptr;
}

}  // namespace

py::Ref<> dict_key(Tracer& tracer, const ValuePtr& item, const char* kind) {
  py::Ref<> key;
  if (item->is_constant()) {
    key = py::Ref<>::newref(item->constant());
  } else if (auto* seq = dynamic_cast<SequenceValue*>(item.get()); seq && !seq->is_list() && seq->tuple_type) {
    key = constant_of(item);  // a named tuple (torch.Size) of constants
  } else if (auto* seq = dynamic_cast<SequenceValue*>(item.get()); seq && !seq->is_list()) {
    // A tuple hashes by its items: each is a key itself ((type(pattern), pattern, flags)).
    key = check(PyTuple_New(static_cast<Py_ssize_t>(seq->items.size())));
    for (size_t i = 0; i < seq->items.size(); ++i)
      PyTuple_SET_ITEM(key.get(), static_cast<Py_ssize_t>(i), dict_key(tracer, seq->items[i], kind).release());
  } else if (PyObject* real = item->real_object(); real && (hashed_by_identity(real) || enum_member(real))) {
    tracer.pin_identity(item);
    key = py::Ref<>::newref(real);
  } else if (PyObject* tensor = item->is_tensor() ? tracer.real_tensor_of(item.get()) : nullptr) {
    // A tensor hashes by identity: one read from outside (a parameter keying an optimizer's
    // state) is that very tensor, pinned by identity; one the graph makes has no object yet.
    if (item->source()) tracer.guards.add(GuardLog::Kind::Id, item->source(), tensor);
    key = py::Ref<>::newref(tensor);
  } else if (const char* type = unhashable_type(item)) {
    raise_error("python_error", PyExc_TypeError, std::string("unhashable type: '") + type + "'");
  } else if (auto* object = dynamic_cast<ObjectValue*>(item.get()); object && object->is_frozenset_subclass()) {
    // frozenset's own hash and == (no Python override) are its members'.
    auto* type = reinterpret_cast<PyTypeObject*>(object->python_type());
    if (type->tp_hash == PyFrozenSet_Type.tp_hash && type->tp_richcompare == PyFrozenSet_Type.tp_richcompare)
      key = object->set_storage(tracer)->keys(true);
  }
  if (!key) unsupported(kind, "a key " + item->repr());
  // Unhashable (a list inside a tuple): the real dict raises the same error.
  if (PyObject_Hash(key.get()) == -1) raise_python_error(tracer, PythonError::fetch());
  return key;
}

ValuePtr key_value(Tracer& tracer, PyObject* key) {
  if (constant_member(key)) return ConstantValue::make(py::Ref<>::newref(key));
  if (ValuePtr tensor = tracer.value_of_real_tensor(key)) return tensor;
  if (PyObject_TypeCheck(key, reinterpret_cast<PyTypeObject*>(tracer.bridge.tensor_type.get()))) {
    // A tensor key of a dict from outside (an optimizer's state by parameter): that very
    // tensor, which the dict's key guard pins by identity, read as an input.
    return tracer.wrap(key, guards::held_source(py::Ref<>::newref(key), "a tensor key"));
  }
  return tracer.wrap(key, nullptr);  // held by identity (or a tuple holding such), pinned where it was read
}

py::Ref<> set_key(Tracer& tracer, const ValuePtr& item) {
  if (auto* tensor = dynamic_cast<TensorValue*>(item.get())) return py::Ref<>::newref(tensor->fake());
  return dict_key(tracer, item, "unsupported_set");
}

}  // namespace bytegraph::trace
