// The instance dict of an object made in the trace: see values/instance_dict.h.
#include "trace/values/instance_dict.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

class InstanceDictMethodValue : public Value {
 public:
  InstanceDictMethodValue(std::shared_ptr<InstanceDictValue> dict, std::string name)
      : dict_(std::move(dict)), name_(std::move(name)) {}
  std::string repr() const override { return dict_->repr() + "." + name_; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    return dict_->call_method(tracer, name_, args, kwargs);
  }
  std::pair<ValuePtr, std::string> bound_attribute() const override { return {dict_, name_}; }

 private:
  std::shared_ptr<InstanceDictValue> dict_;
  std::string name_;
};

ValuePtr text(const std::string& name) { return ConstantValue::make(check(PyUnicode_FromString(name.c_str()))); }

}  // namespace

std::string InstanceDictValue::key_of(const ValuePtr& key) const {
  if (!key->is_constant() || !PyUnicode_Check(key->constant()))
    unsupported("unsupported_subscript", "the key " + key->repr() + " of " + repr() + " (attribute names are strings)");
  return PyUnicode_AsUTF8(key->constant());
}

ValuePtr InstanceDictValue::find(const std::string& name) const {
  for (const auto& [attr, value] : object_->attrs)
    if (attr == name) return value;
  return nullptr;  // a new object starts with an empty __dict__
}

void InstanceDictValue::store(Tracer& tracer, const std::string& name, ValuePtr value) {
  tracer.will_mutate(object_);
  assign_named(object_->attrs, name, std::move(value));
}

bool InstanceDictValue::contains(const ValuePtr& key) const {
  if (!key->is_constant() || !PyUnicode_Check(key->constant())) return false;
  return find(PyUnicode_AsUTF8(key->constant())) != nullptr;
}

bool InstanceDictValue::truthy(Tracer&) const {
  for (const auto& [attr, value] : object_->attrs)
    if (value) return true;
  return false;
}

std::optional<Args> InstanceDictValue::unpack(Tracer&) {
  Args keys;
  for (const auto& [attr, value] : object_->attrs)
    if (value) keys.push_back(text(attr));
  return keys;
}

ValuePtr InstanceDictValue::get_item(Tracer&, const ValuePtr& key) {
  if (ValuePtr value = find(key_of(key))) return value;
  raise_error("key_error", PyExc_KeyError, key);
}

ValuePtr InstanceDictValue::get_attr(Tracer&, const std::string& name) {
  static const char* methods[] = {"get", "pop", "setdefault", "keys", "values", "items", "update",
                                  "__getitem__", "__setitem__", "__delitem__", "__contains__", "__len__"};
  for (const char* method : methods) {
    if (name == method)
      return std::make_shared<InstanceDictMethodValue>(std::static_pointer_cast<InstanceDictValue>(shared_from_this()), name);
  }
  unsupported("unsupported_attribute", repr() + "." + name);
}

ValuePtr InstanceDictValue::call_method(Tracer& tracer, const std::string& name, const Args& args,
                                        const KwArgs& kwargs) {
  const size_t n = args.size();
  if (name == "update" && n <= 1) {
    for (const auto& [key, value] : kwargs) store(tracer, key, value);
    if (n == 1) {
      auto* items = dynamic_cast<DictValue*>(args[0].get());
      if (items == nullptr) unsupported("unsupported_call", repr() + ".update(" + args[0]->repr() + ")");
      for (size_t i = 0; i < items->keys.size(); ++i) store(tracer, key_of(ConstantValue::make(items->keys[i].copy())), items->values[i]);
    }
    return ConstantValue::none();
  }
  if (!kwargs.empty()) unsupported("unsupported_call", repr() + "." + name + " with keyword arguments");
  if ((name == "get" && (n == 1 || n == 2))) {
    ValuePtr value = find(key_of(args[0]));
    return value ? value : (n == 2 ? args[1] : ConstantValue::none());
  }
  if (name == "__getitem__" && n == 1) return get_item(tracer, args[0]);
  if (name == "__contains__" && n == 1) return ConstantValue::make(py::Ref<>::newref(contains(args[0]) ? Py_True : Py_False));
  if (name == "__setitem__" && n == 2) {
    store(tracer, key_of(args[0]), args[1]);
    return ConstantValue::none();
  }
  if ((name == "pop" && (n == 1 || n == 2)) || (name == "__delitem__" && n == 1)) {
    std::string key = key_of(args[0]);
    ValuePtr value = find(key);
    if (!value) {
      if (name == "pop" && n == 2) return args[1];
      raise_error("key_error", PyExc_KeyError, args[0]);
    }
    store(tracer, key, nullptr);
    return name == "pop" ? value : ConstantValue::none();
  }
  if (name == "setdefault" && (n == 1 || n == 2)) {
    std::string key = key_of(args[0]);
    if (ValuePtr value = find(key)) return value;
    ValuePtr value = n == 2 ? args[1] : ConstantValue::none();
    store(tracer, key, value);
    return value;
  }
  if (name == "__len__" && n == 0) {
    return ConstantValue::make(check(PyLong_FromSsize_t(static_cast<Py_ssize_t>(unpack(tracer)->size()))));
  }
  if ((name == "keys" || name == "values" || name == "items") && n == 0) {
    // A snapshot: a list of the keys, values or pairs now (enough for iteration and len()).
    Args items;
    for (const auto& [attr, value] : object_->attrs) {
      if (!value) continue;
      if (name == "keys") items.push_back(text(attr));
      else if (name == "values") items.push_back(value);
      else items.push_back(std::make_shared<SequenceValue>(false, Args{text(attr), value}));
    }
    return std::make_shared<SequenceValue>(true, std::move(items));
  }
  unsupported("unsupported_call", repr() + "." + name + " with " + std::to_string(n) + " arguments");
}

}  // namespace bytegraph::trace
