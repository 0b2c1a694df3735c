// Dict views and the dict methods that go with them: see values/dict_views.h.
#include "trace/values/dict_views.h"

#include "trace/operators.h"
#include "trace/values/generators.h"
#include "trace/values/exceptions.h"
#include "trace/values/keys.h"

namespace bytegraph::trace {

namespace {

PyObject* view_type(DictViewValue::Kind kind) {
  // The real view types, from an empty dict (kept for the process).
  static PyObject* types[3] = {nullptr, nullptr, nullptr};
  int index = static_cast<int>(kind);
  if (types[index] == nullptr) {
    py::Ref<> dict = check(PyDict_New());
    const char* names[] = {"keys", "values", "items"};
    py::Ref<> view = check(PyObject_CallMethod(dict.get(), names[index], nullptr));
    types[index] = py::Ref<>::newref((PyObject*)Py_TYPE(view.get())).release();
  }
  return types[index];
}


// Pairs from an iterable of 2-item iterables (dict.update(pairs), dict(pairs)).
void update_from(Tracer& tracer, DictValue& dict, const ValuePtr& other) {
  if (auto* source = dynamic_cast<DictValue*>(other.get())) {
    for (size_t i = 0; i < source->keys.size(); ++i) dict.set_item(source->keys[i].get(), source->values[i]);
    return;
  }
  Args pairs = other->is_iterator() ? drain(tracer, *other) : [&] {
    auto items = other->unpack(tracer);
    if (!items) unsupported("unsupported_call", "dict.update with " + other->repr());
    return *items;
  }();
  for (const auto& pair : pairs) {
    auto kv = pair->unpack(tracer);
    if (!kv || kv->size() != 2) unsupported("unsupported_call", "dict.update with the item " + pair->repr());
    dict.set_item(dict_key(tracer, (*kv)[0], "unsupported_dict").get(), (*kv)[1]);
  }
}

void erase(DictValue& dict, int index) {
  dict.keys.erase(dict.keys.begin() + index);
  dict.values.erase(dict.values.begin() + index);
}

}  // namespace

std::string DictViewValue::repr() const {
  const char* names[] = {"DictKeysVariable(", "DictValuesVariable(", "DictItemsVariable("};
  return names[static_cast<int>(kind_)] + dict_->repr() + ")";
}

PyObject* DictViewValue::python_type() const { return view_type(kind_); }

std::optional<Args> DictViewValue::unpack(Tracer& tracer) {
  Args items;
  for (size_t i = 0; i < dict_->keys.size(); ++i) {
    ValuePtr key = key_value(tracer, dict_->keys[i].get());
    if (kind_ == Kind::Keys) items.push_back(key);
    else if (kind_ == Kind::Values) items.push_back(dict_->values[i]);
    else items.push_back(std::make_shared<SequenceValue>(false, Args{key, dict_->values[i]}));
  }
  return items;
}

ValuePtr DictViewValue::get_attr(Tracer&, const std::string& name) {
  if (name == "mapping") unsupported("unsupported_attribute", repr() + ".mapping (a read-only proxy)");
  unsupported("unsupported_attribute", repr() + "." + name);
}

bool DictViewValue::contains(Tracer& tracer, const ValuePtr& item) {
  if (kind_ == Kind::Keys) {
    if (!item->is_constant()) unsupported("unsupported_operator", "`in` a dict's keys with " + item->repr());
    return dict_->find(item->constant()) >= 0;
  }
  if (kind_ == Kind::Items) {
    auto pair = item->unpack(tracer);
    if (!pair || pair->size() != 2) return false;
    if (!(*pair)[0]->is_constant()) unsupported("unsupported_operator", "`in` a dict's items with " + item->repr());
    int index = dict_->find((*pair)[0]->constant());
    if (index < 0) return false;
    return member_equal(tracer, dict_->values[index], (*pair)[1]);
  }
  for (const auto& value : dict_->values)
    if (member_equal(tracer, value, item)) return true;
  return false;
}

py::Ref<> DictViewValue::key_set() const {
  py::Ref<> set = check(PySet_New(nullptr));
  for (const auto& key : dict_->keys) check_status(PySet_Add(set.get(), key.get()));
  return set;
}

bool is_dict_method(const std::string& name) {
  static const char* names[] = {"get", "keys", "values", "items", "setdefault", "pop", "popitem", "copy", "clear",
                                "update", "__contains__", "__getitem__"};
  for (const char* known : names)
    if (name == known) return true;
  return false;
}

ValuePtr call_dict_method(Tracer& tracer, const std::shared_ptr<DictValue>& self, const std::string& name,
                          const Args& args, const KwArgs& kwargs) {
  DictValue& dict = *self;
  if (!kwargs.empty() && name != "update") return nullptr;
  if (args.empty()) {
    if (name == "keys") return std::make_shared<DictViewValue>(self, DictViewValue::Kind::Keys);
    if (name == "values") return std::make_shared<DictViewValue>(self, DictViewValue::Kind::Values);
    if (name == "items") return std::make_shared<DictViewValue>(self, DictViewValue::Kind::Items);
    if (name == "copy") {
      auto copy = std::make_shared<DictValue>();
      for (size_t i = 0; i < dict.keys.size(); ++i) copy->set_item(dict.keys[i].get(), dict.values[i]);
      return copy;
    }
    if (name == "clear") {
      tracer.will_mutate(self);
      dict.keys.clear();
      dict.values.clear();
      return ConstantValue::none();
    }
    if (name == "popitem") {
      if (dict.keys.empty()) raise_error("key_error", PyExc_KeyError, "popitem(): dictionary is empty");
      tracer.will_mutate(self);
      int last = static_cast<int>(dict.keys.size()) - 1;
      auto pair = std::make_shared<SequenceValue>(false, Args{key_value(tracer, dict.keys[last].get()), dict.values[last]});
      erase(dict, last);
      return pair;
    }
  }
  if ((name == "__contains__" || name == "__getitem__") && args.size() == 1) {
    if (name == "__getitem__") return dict.get_item(tracer, args[0]);
    bool found = dict.find(dict_key(tracer, args[0], "unsupported_operator").get()) >= 0;
    return ConstantValue::make(py::Ref<>::newref(found ? Py_True : Py_False));
  }
  if (name == "get" && (args.size() == 1 || args.size() == 2)) {
    int index = dict.find(dict_key(tracer, args[0], "unsupported_dict").get());
    if (index >= 0) return dict.values[index];
    return args.size() == 2 ? args[1] : ConstantValue::none();
  }
  if ((name == "setdefault" || name == "pop") && (args.size() == 1 || args.size() == 2)) {
    py::Ref<> key = dict_key(tracer, args[0], "unsupported_dict");
    int index = dict.find(key.get());
    if (name == "setdefault") {
      if (index >= 0) return dict.values[index];
      tracer.will_mutate(self);
      ValuePtr value = args.size() == 2 ? args[1] : ConstantValue::none();
      dict.set_item(key.get(), value);
      return value;
    }
    if (index < 0) {
      if (args.size() == 2) return args[1];
      raise_error("key_error", PyExc_KeyError, args[0]);
    }
    tracer.will_mutate(self);
    ValuePtr value = dict.values[index];
    erase(dict, index);
    return value;
  }
  if (name == "update" && args.size() <= 1) {
    tracer.will_mutate(self);
    if (!args.empty()) update_from(tracer, dict, args[0]);
    for (const auto& [key, value] : kwargs) dict.set_item(check(PyUnicode_FromString(key.c_str())).get(), value);
    return ConstantValue::none();
  }
  return nullptr;
}

}  // namespace bytegraph::trace
