// Tuples, lists and dicts with symbolic items. Containers built during the trace may be
// mutated; those that came from the frame's inputs may not yet (their mutation would have
// to be replayed after the graph runs).
#include "trace/operators.h"
#include "trace/symbolic.h"
#include "trace/tracer.h"
#include "trace/values/dict_views.h"
#include "trace/values/list_methods.h"
#include "trace/values/exceptions.h"
#include "trace/values/keys.h"

#include <unordered_set>

namespace bytegraph::trace {

namespace {

std::string items_repr(const Args& items) {
  std::string text = "[";
  for (size_t i = 0; i < items.size(); ++i) text += (i ? ", " : "") + items[i]->repr();
  return text + "]";
}

long normalise_index(PyObject* key, size_t size, const std::string& what) {
  long index = PyLong_AsLong(key);
  if (index == -1 && PyErr_Occurred()) throw_python_error();
  if (index < 0) index += static_cast<long>(size);
  if (index < 0 || index >= static_cast<long>(size)) raise_error("index_error", PyExc_IndexError, what + " index out of range");
  return index;
}

// `xs.append` and friends, bound to a symbolic container.
class ContainerMethodValue : public Value {
 public:
  ContainerMethodValue(ValuePtr self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string repr() const override { return "GetAttrVariable(" + self_->repr() + ", " + name_ + ")"; }
  std::pair<ValuePtr, std::string> bound_attribute() const override { return {self_, name_}; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    if (auto dict = std::dynamic_pointer_cast<DictValue>(self_))
      if (ValuePtr result = call_dict_method(tracer, dict, name_, args, kwargs)) return result;
    if (dynamic_cast<SequenceValue*>(self_.get()))
      if (ValuePtr result = call_list_method(tracer, std::static_pointer_cast<SequenceValue>(self_), name_, args, kwargs))
        return result;
    auto* seq = dynamic_cast<SequenceValue*>(self_.get());
    if (!seq || !kwargs.empty()) unsupported("unsupported_call", repr() + " with these arguments");
    return call_sequence(tracer, *seq, args);
  }

 private:
  ValuePtr call_sequence(Tracer& tracer, SequenceValue& seq, const Args& args) {
    if (name_ == "append" && args.size() == 1) {
      tracer.will_mutate(self_);
      seq.items.push_back(args[0]);
      return ConstantValue::none();
    }
    if (name_ == "extend" && args.size() == 1) {
      if (args[0]->is_iterator() && !dynamic_cast<IteratorValue*>(args[0].get())) {
        // A lazy iterator (map, filter, a generator) is consumed one item at a time, each
        // appended before the next is made: a function reading the list sees the new items.
        while (ValuePtr item = args[0]->next_item(tracer)) {
          tracer.will_mutate(self_);
          seq.items.push_back(item);
        }
        return ConstantValue::none();
      }
      auto items = args[0]->unpack(tracer);
      if (!items) unsupported("unsupported_call", "extend with " + args[0]->repr());
      tracer.will_mutate(self_);
      seq.items.insert(seq.items.end(), items->begin(), items->end());
      return ConstantValue::none();
    }
    if (name_ == "insert" && args.size() == 2 && args[0]->is_constant()) {
      tracer.will_mutate(self_);
      long index = PyLong_AsLong(args[0]->constant());
      long size = static_cast<long>(seq.items.size());
      if (index < 0) index = std::max(0L, index + size);
      index = std::min(index, size);
      seq.items.insert(seq.items.begin() + index, args[1]);
      return ConstantValue::none();
    }
    if (name_ == "pop" && args.size() <= 1) {
      if (seq.items.empty()) raise_error("index_error", PyExc_IndexError, "pop from empty list");
      tracer.will_mutate(self_);
      long index = args.empty() ? static_cast<long>(seq.items.size()) - 1
                                : normalise_index(args[0]->constant(), seq.items.size(), "pop");
      ValuePtr item = seq.items[index];
      seq.items.erase(seq.items.begin() + index);
      return item;
    }
    if ((name_ == "index" || name_ == "count") && args.size() == 1) {
      long count = 0, first = -1;
      for (size_t i = 0; i < seq.items.size(); ++i) {
        if (contains(tracer, std::make_shared<SequenceValue>(false, Args{seq.items[i]}), args[0])) {
          if (first < 0) first = static_cast<long>(i);
          ++count;
        }
      }
      if (name_ == "index" && first < 0) raise_error("value_error", PyExc_ValueError, "list.index(x): x not in list");
      return ConstantValue::make(check(PyLong_FromLong(name_ == "index" ? first : count)));
    }
    unsupported("unsupported_call", repr() + " with " + std::to_string(args.size()) + " arguments");
  }

  ValuePtr self_;
  std::string name_;
};

// What a named tuple's class holds under `name` (namedtuple's _replace/_asdict/_fields, a
// subclass's own methods and properties): Python methods bind to the tuple, classmethods and
// staticmethods through the class, plain values as they are; null for tuple's own methods and
// for what would run C code.
ValuePtr named_tuple_class_attribute(Tracer& tracer, const ValuePtr& self, PyObject* type, const std::string& name) {
  py::Ref<> key = check(PyUnicode_FromString(name.c_str()));
  PyObject* found = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(type), key.get());  // borrowed
  if (found == nullptr || found == _PyType_Lookup(&PyTuple_Type, key.get())) return nullptr;
  guards::SourcePtr source = guards::class_attr_source(type, name);
  if (PyFunction_Check(found)) return std::make_shared<BoundMethodValue>(tracer.wrap_user_function(found, source), self);
  if (Py_TYPE(found) == &PyStaticMethod_Type || Py_TYPE(found) == &PyClassMethod_Type) {
    py::Ref<> bound = check(PyObject_GetAttrString(type, name.c_str()));
    return tracer.wrap(bound.get(), source);
  }
  if (PyObject_TypeCheck(found, &PyProperty_Type)) {
    py::Ref<> getter = check(PyObject_GetAttrString(found, "fget"));
    if (!PyFunction_Check(getter.get())) return nullptr;
    return tracer.wrap_user_function(getter.get(), guards::attr_source(source, "fget"))->call(tracer, {self}, {});
  }
  if (Py_TYPE(found)->tp_descr_get == nullptr) return tracer.wrap(found, source);
  return nullptr;
}

}  // namespace

// ---- sequences ------------------------------------------------------------------------

namespace {

// A container that holds itself (a module's globals, a list appended to itself) prints as
// "..." where it recurs, as repr() does.
class ReprScope {
 public:
  explicit ReprScope(const Value* value) : value_(value), entered_(active().insert(value).second) {}
  ~ReprScope() {
    if (entered_) active().erase(value_);
  }
  bool recursive() const { return !entered_; }

 private:
  static std::unordered_set<const Value*>& active() {
    thread_local std::unordered_set<const Value*> values;
    return values;
  }
  const Value* value_;
  bool entered_;
};

}  // namespace

std::string SequenceValue::repr() const {
  ReprScope scope(this);
  if (scope.recursive()) return is_list_ ? "[...]" : "(...)";
  return std::string(is_list_ ? "ListVariable(" : "TupleVariable(") + items_repr(items) + ")";
}

py::Ref<> named_tuple_constructor(PyObject* type) {
  py::Ref<> make = py::Ref<>::steal(PyObject_GetAttrString(type, "_make"));
  if (make) return make;
  PyErr_Clear();
  return py::Ref<>::newref(type);
}

bool is_torch_size(PyObject* type) {
  static PyObject* size_type = [] {  // kept for the process, like the torch module holding it
    py::Ref<> torch = check(PyImport_ImportModule("torch"));
    return check(PyObject_GetAttrString(torch.get(), "Size")).release();
  }();
  return type == size_type;
}

PyObject* SequenceValue::python_type() const {
  if (tuple_type) return tuple_type.get();
  return is_list_ ? (PyObject*)&PyList_Type : (PyObject*)&PyTuple_Type;
}

py::Ref<> named_tuple_fields(PyObject* type) {
  // namedtuple classes list their fields in _fields, structseqs in __match_args__.
  for (const char* name : {"_fields", "__match_args__"}) {
    py::Ref<> fields = py::Ref<>::steal(PyObject_GetAttrString(type, name));
    if (fields && PyTuple_Check(fields.get())) return fields;
    PyErr_Clear();
  }
  return {};
}


ValuePtr SequenceValue::get_attr(Tracer& tracer, const std::string& name) {
  if (tuple_type) {
    if (py::Ref<> fields = named_tuple_fields(tuple_type.get())) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields.get()); ++i)
        if (name == PyUnicode_AsUTF8(PyTuple_GET_ITEM(fields.get(), i)) && static_cast<size_t>(i) < items.size())
          return items[i];
    }
    if (!is_size())
      if (ValuePtr found = named_tuple_class_attribute(tracer, shared_from_this(), tuple_type.get(), name)) return found;
  }
  static const char* methods[] = {"append", "extend", "insert", "pop", "index", "count"};
  for (const char* method : methods)
    if (name == method) return std::make_shared<ContainerMethodValue>(shared_from_this(), name);
  if (is_list_method(name, is_list_)) return std::make_shared<ContainerMethodValue>(shared_from_this(), name);
  unsupported("unsupported_attribute", repr() + "." + name);
}

py::Ref<> SequenceValue::as_graph_arg(Tracer& tracer, ArgMode mode) const {
  py::Ref<> list = check(PyList_New(static_cast<Py_ssize_t>(items.size())));
  for (size_t i = 0; i < items.size(); ++i)
    PyList_SET_ITEM(list.get(), i, items[i]->as_graph_arg(tracer, mode).release());
  if (is_list_) return list;
  return check(PyList_AsTuple(list.get()));
}

ValuePtr SequenceValue::get_item(Tracer& tracer, const ValuePtr& symbolic_key) {
  ValuePtr key = concrete_key(tracer, symbolic_key, "indexing a list or tuple needs a concrete index");
  if (!key->is_constant()) unsupported("unsupported_subscript", repr() + "[" + key->repr() + "]");
  PyObject* index = key->constant();
  if (PySlice_Check(index)) {
    Py_ssize_t start, stop, step;
    check_status(PySlice_Unpack(index, &start, &stop, &step));
    Py_ssize_t count = PySlice_AdjustIndices(static_cast<Py_ssize_t>(items.size()), &start, &stop, step);
    Args slice;
    for (Py_ssize_t i = 0, at = start; i < count; ++i, at += step) slice.push_back(items[at]);
    auto result = std::make_shared<SequenceValue>(is_list_, std::move(slice));
    if (is_size()) result->tuple_type = py::Ref<>::newref(tuple_type.get());
    return result;
  }
  if (!PyLong_Check(index)) unsupported("unsupported_subscript", repr() + "[" + key->repr() + "]");
  return items[normalise_index(index, items.size(), is_list_ ? "list" : "tuple")];
}

// ---- dicts ----------------------------------------------------------------------------

std::string DictValue::repr() const {
  ReprScope scope(this);
  if (scope.recursive()) return "{...}";
  std::string text = "ConstDictVariable({";
  for (size_t i = 0; i < keys.size(); ++i)
    text += (i ? ", " : "") + py_repr(keys[i].get()) + ": " + values[i]->repr();
  return text + "})";
}

int DictValue::find(PyObject* key) const {
  // As dict does: == only between keys of equal hash (a tensor's == is elementwise; its hash
  // is its identity).
  const Py_hash_t hash = PyObject_Hash(key);
  if (hash == -1) throw_python_error();
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].get() == key) return static_cast<int>(i);
    const Py_hash_t other = PyObject_Hash(keys[i].get());
    if (other == -1) throw_python_error();
    if (other != hash) continue;
    int equal = PyObject_RichCompareBool(keys[i].get(), key, Py_EQ);
    check_status(equal);
    if (equal) return static_cast<int>(i);
  }
  return -1;
}

void DictValue::set_item(PyObject* key, ValuePtr value) {
  int index = find(key);
  if (index >= 0) {
    values[index] = std::move(value);
    return;
  }
  keys.push_back(py::Ref<>::newref(key));
  values.push_back(std::move(value));
}

ValuePtr DictValue::get_attr(Tracer&, const std::string& name) {
  if (is_dict_method(name)) return std::make_shared<ContainerMethodValue>(shared_from_this(), name);
  unsupported("unsupported_attribute", repr() + "." + name);
}

py::Ref<> DictValue::as_graph_arg(Tracer& tracer, ArgMode mode) const {
  py::Ref<> dict = check(PyDict_New());
  for (size_t i = 0; i < keys.size(); ++i)
    check_status(PyDict_SetItem(dict.get(), keys[i].get(), values[i]->as_graph_arg(tracer, mode).get()));
  return dict;
}

std::optional<Args> DictValue::unpack(Tracer& tracer) {
  Args items;
  for (const auto& key : keys) items.push_back(key_value(tracer, key.get()));
  return items;
}

ValuePtr DictValue::get_item(Tracer& tracer, const ValuePtr& symbolic_key) {
  ValuePtr key = concrete_key(tracer, symbolic_key, "a dict key must be a concrete value");
  int index = find(dict_key(tracer, key, "unsupported_subscript").get());
  if (index < 0) raise_error("key_error", PyExc_KeyError, key);
  return values[index];
}

}  // namespace bytegraph::trace
