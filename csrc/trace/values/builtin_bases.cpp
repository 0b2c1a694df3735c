// Instances of user classes with a builtin container base (dict, OrderedDict, set,
// frozenset): the items the base keeps, held by a symbolic dict or set, and the base's own
// methods applied to them.
#include "trace/values/builtin_bases.h"

#include "python/type_dict.h"
#include "trace/operators.h"
#include "trace/tracer.h"
#include "trace/values/exceptions.h"
#include "trace/values/iterators.h"
#include "trace/values/list_methods.h"
#include "trace/values/sets.h"

namespace bytegraph::trace {

namespace {

bool subtype_of(PyObject* type, PyTypeObject* base) {
  return PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type), base) != 0;
}

// The C class of `type`'s MRO whose own `name` it inherits (borrowed), or null.
PyObject* defining_class(PyObject* type, const char* name) {
  PyObject* mro = reinterpret_cast<PyTypeObject*>(type)->tp_mro;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    auto* owner = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i));
    if (py::own_type_attribute(owner, name) != nullptr) return reinterpret_cast<PyObject*>(owner);
  }
  return nullptr;
}

// `d.copy()` of a dict subclass instance, as the class that defines copy makes it: dict's
// gives a plain dict of the items, OrderedDict's `type(d)(d)`; others are not modelled.
ValuePtr copy_dict_subclass(Tracer& tracer, const std::shared_ptr<ObjectValue>& self, const DictValue& items) {
  PyObject* type = self->python_type();
  PyObject* owner = defining_class(type, "copy");
  if (owner == reinterpret_cast<PyObject*>(&PyDict_Type)) {
    auto copy = std::make_shared<DictValue>();
    copy->keys.reserve(items.keys.size());
    for (size_t i = 0; i < items.keys.size(); ++i) copy->set_item(items.keys[i].get(), items.values[i]);
    return copy;
  }
  static PyObject* ordered_dict = [] {  // kept for the process
    py::Ref<> collections = check(PyImport_ImportModule("collections"));
    return check(PyObject_GetAttrString(collections.get(), "OrderedDict")).release();
  }();
  if (owner == ordered_dict) return tracer.wrap(type, self->source() ? guards::type_source(self->source()) : guards::class_source(type))->call(tracer, {self}, {});
  return nullptr;
}

}  // namespace

bool ObjectValue::is_set_subclass() const {
  return subtype_of(type_.get(), &PySet_Type) || subtype_of(type_.get(), &PyFrozenSet_Type);
}

bool ObjectValue::is_frozenset_subclass() const { return subtype_of(type_.get(), &PyFrozenSet_Type); }

bool ObjectValue::is_list_subclass() const { return subtype_of(type_.get(), &PyList_Type); }

bool ObjectValue::is_tuple_subclass() const { return subtype_of(type_.get(), &PyTuple_Type); }

std::shared_ptr<SequenceValue> ObjectValue::sequence_storage(Tracer& tracer) {
  if (sequence_) return sequence_;
  if (!is_list_subclass() && !is_tuple_subclass()) unsupported("unsupported_call", repr() + " is not a list or tuple");
  if (is_new()) {
    sequence_ = std::make_shared<SequenceValue>(is_list_subclass(), Args{});
    return sequence_;
  }
  // Items of a list or tuple subclass from outside: read from the base's own storage (not
  // through the class's __getitem__), the length guarded and each item through its source;
  // changes are written back through list's own methods.
  if (!source()) unsupported("unsupported_call", "the items of " + repr() + ", which the trace has no name for");
  const Py_ssize_t size = Py_SIZE(real_.get());
  Args items;
  for (Py_ssize_t i = 0; i < size; ++i) {
    PyObject* item = is_list_subclass() ? PyList_GET_ITEM(real_.get(), i) : PyTuple_GET_ITEM(real_.get(), i);
    items.push_back(tracer.wrap(item, guards::stored_item_source(source(), check(PyLong_FromSsize_t(i)))));
  }
  tracer.guards.add(GuardLog::Kind::Length, source(), nullptr, size);
  sequence_ = std::make_shared<SequenceValue>(is_list_subclass(), std::move(items));
  return sequence_;
}

ValuePtr ObjectValue::builtin_items(Tracer& tracer) {
  if (items_ || subtype_of(type_.get(), &PyDict_Type)) return dict_storage(tracer);
  if (members_ || is_set_subclass()) return set_storage(tracer);
  if (sequence_ || is_list_subclass() || is_tuple_subclass()) return sequence_storage(tracer);
  return nullptr;
}

std::shared_ptr<DictValue> ObjectValue::dict_storage(Tracer& tracer) {
  if (items_) return items_;
  if (!PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type_.get()), &PyDict_Type))
    unsupported("unsupported_call", repr() + " is not a dict");
  if (is_new()) {
    items_ = std::make_shared<DictValue>();
    return items_;
  }
  // Items of a dict subclass from outside: its keys guarded in order, each item read through
  // its source; changes are written back through the base dict's own methods.
  if (!source()) unsupported("unsupported_dict", "the items of " + repr() + ", which the trace has no name for");
  py::Ref<> keys = check(PyList_New(0));
  items_ = std::make_shared<DictValue>();
  PyObject *key, *item;  // borrowed
  Py_ssize_t position = 0;
  std::vector<std::pair<py::Ref<>, py::Ref<>>> entries;
  while (PyDict_Next(real_.get(), &position, &key, &item)) entries.emplace_back(py::Ref<>::newref(key), py::Ref<>::newref(item));
  // A subclass (OrderedDict) may iterate in its own order: the order user code sees.
  py::Ref<> ordered = check(PySequence_List(real_.get()));
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ordered.get()); ++i) {
    PyObject* k = PyList_GET_ITEM(ordered.get(), i);
    for (const auto& [entry_key, entry_item] : entries) {
      if (entry_key.get() != k) continue;
      items_->set_item(k, tracer.wrap(entry_item.get(), guards::stored_item_source(source(), entry_key.copy())));
    }
    check_status(PyList_Append(keys.get(), k));
  }
  tracer.guards.add(GuardLog::Kind::DictKeys, source(), check(PyList_AsTuple(keys.get())).get());
  return items_;
}

std::shared_ptr<SetValue> ObjectValue::set_storage(Tracer& tracer) {
  if (members_) return members_;
  if (!is_set_subclass()) unsupported("unsupported_call", repr() + " is not a set");
  if (is_new()) {
    members_ = std::make_shared<SetValue>(is_frozenset_subclass());
    return members_;
  }
  // Members of a set subclass from outside: guarded as they are, in their order (read through
  // set's own iterator: the class's __iter__ is not what stores them). Changes are written
  // back through set's own methods.
  if (!source()) unsupported("unsupported_set", "the members of " + repr() + ", which the trace has no name for");
  py::Ref<> iterator = check(PySet_Type.tp_iter(real_.get()));
  py::Ref<> members = check(PySequence_Tuple(iterator.get()));
  // The storage is this object's, not a value of its own: it has no source and is local.
  std::shared_ptr<SetValue> real_members = set_of_members(tracer, is_frozenset_subclass(), members.get(), nullptr);
  if (!real_members) unsupported("unsupported_set", "a member of " + repr() + " the tracer cannot hold");
  py::Ref<> snapshot = check(PyTuple_Pack(2, type_.get(), members.get()));
  tracer.guards.add(GuardLog::Kind::SetItems, source(), snapshot.get());
  members_ = std::move(real_members);
  return members_;
}

// dict's or set's own method `name` on the items of a subclass instance; null for a method
// neither base has here.
namespace {

bool list_method_mutates(const std::string& name) {
  for (const char* mutating : {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__",
                               "__delitem__", "__iadd__", "__imul__"})
    if (name == mutating) return true;
  return false;
}

// list's or tuple's own method `name` on a subclass instance's items.
ValuePtr call_sequence_base_method(Tracer& tracer, const std::shared_ptr<ObjectValue>& self, const std::string& name,
                                   const Args& args) {
  std::shared_ptr<SequenceValue> items = self->sequence_storage(tracer);
  const bool mutates = list_method_mutates(name);
  if (mutates && !self->is_list_subclass()) return nullptr;
  if (name == "__init__") {
    if (self->is_tuple_subclass()) return ConstantValue::none();  // tuple.__new__ took the items
    if (args.size() > 1) raise_error("bad_call", PyExc_TypeError, "list expected at most 1 argument, got " + std::to_string(args.size()));
    tracer.will_mutate(self);
    tracer.journal.save(items);
    items->items.clear();
    if (!args.empty()) items->get_attr(tracer, "extend")->call(tracer, args, {});
    return ConstantValue::none();
  }
  if (mutates) tracer.will_mutate(self);
  tracer.journal.save(items);
  if (name == "__getitem__" && args.size() == 1) return items->get_item(tracer, args[0]);
  if (name == "__setitem__" && args.size() == 2) {
    assign_list_item(tracer, items, args[0], args[1]);
    return ConstantValue::none();
  }
  if (name == "__delitem__" && args.size() == 1) {
    assign_list_item(tracer, items, args[0], nullptr);
    return ConstantValue::none();
  }
  if (name == "__len__" && args.empty()) return ConstantValue::make(check(PyLong_FromSize_t(items->items.size())));
  if (name == "__contains__" && args.size() == 1) return make_bool(contains(tracer, items, args[0]));
  if (name == "__iter__" && args.empty()) return iterate(tracer, items, "iter");
  if ((name == "__eq__" || name == "__ne__" || name == "__lt__" || name == "__le__" || name == "__gt__" || name == "__ge__" ||
       name == "__add__" || name == "__mul__" || name == "__rmul__") && args.size() == 1) {
    // The base's operator on the items: a plain list or tuple of them against the other side.
    ValuePtr plain = std::make_shared<SequenceValue>(items->is_list(), items->items);
    std::string op = name.substr(2, name.size() - 4);
    if (op == "rmul") op = "mul";
    return apply_operator(tracer, operator_function(op.c_str()), {plain, args[0]});
  }
  if (is_list_method(name, items->is_list()) || name == "append" || name == "extend" || name == "insert" || name == "pop" ||
      name == "index" || name == "count")
    return items->get_attr(tracer, name)->call(tracer, args, {});
  return nullptr;
}

}  // namespace

ValuePtr call_base_method(Tracer& tracer, const std::shared_ptr<ObjectValue>& self, const std::string& name,
                          const Args& args) {
  if (self->is_set_subclass()) return call_set_base_method(tracer, self, name, args);
  if (self->is_list_subclass() || self->is_tuple_subclass()) return call_sequence_base_method(tracer, self, name, args);
  if (!PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(self->python_type()), &PyDict_Type)) return nullptr;
  std::shared_ptr<DictValue> items = self->dict_storage(tracer);
  if (name == "__setitem__" && args.size() == 2) {
    py::Ref<> key = dict_key(tracer, args[0], "unsupported_subscript");
    tracer.will_mutate(self);
    tracer.journal.save(items);
    items->set_item(key.get(), args[1]);
    return ConstantValue::none();
  }
  if (name == "__getitem__" && args.size() == 1) return items->get_item(tracer, args[0]);
  if (name == "__delitem__" && args.size() == 1) {
    int index = items->find(dict_key(tracer, args[0], "unsupported_subscript").get());
    if (index < 0) raise_error("key_error", PyExc_KeyError, args[0]);
    tracer.will_mutate(self);
    tracer.journal.save(items);
    items->keys.erase(items->keys.begin() + index);
    items->values.erase(items->values.begin() + index);
    return ConstantValue::none();
  }
  if (name == "__len__" && args.empty()) return ConstantValue::make(check(PyLong_FromSsize_t(static_cast<Py_ssize_t>(items->keys.size()))));
  if (name == "__contains__" && args.size() == 1) {
    bool found = items->find(dict_key(tracer, args[0], "unsupported_operator").get()) >= 0;
    return ConstantValue::make(py::Ref<>::newref(found ? Py_True : Py_False));
  }
  if (name == "__iter__" || name == "keys" || name == "values" || name == "items" || name == "get")
    return items->get_attr(tracer, name == "__iter__" ? "keys" : name)->call(tracer, args, {});
  if (name == "copy" && args.empty()) return copy_dict_subclass(tracer, self, *items);
  if (name == "update" || name == "pop" || name == "setdefault" || name == "clear" || name == "popitem") {
    // dict's own methods, on the items (journaled there); the object is marked changed.
    tracer.will_mutate(self);
    return items->get_attr(tracer, name)->call(tracer, args, {});
  }
  return nullptr;
}

ValuePtr call_set_base_method(Tracer& tracer, const std::shared_ptr<ObjectValue>& self, const std::string& name,
                              const Args& args) {
  std::shared_ptr<SetValue> members = self->set_storage(tracer);
  if (name == "__init__") {
    // frozenset's members were fixed by __new__; set.__init__ replaces them.
    if (self->is_frozenset_subclass()) return ConstantValue::none();
    if (args.size() > 1) raise_error("bad_call", PyExc_TypeError, "set expected at most 1 argument, got " + std::to_string(args.size()));
    tracer.will_mutate(self);
    members->get_attr(tracer, "clear")->call(tracer, {}, {});
    if (!args.empty()) members->get_attr(tracer, "update")->call(tracer, args, {});
    return ConstantValue::none();
  }
  if (self->is_frozenset_subclass() && set_method_mutates(name)) return nullptr;
  if (set_method_mutates(name)) tracer.will_mutate(self);
  return call_set_method(tracer, self, name, args);
}

}  // namespace bytegraph::trace
