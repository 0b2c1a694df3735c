// functools.partial and operator getters: see values/partial.h.
#include "trace/values/partial.h"

#include "trace/operators.h"
#include "trace/values/exceptions.h"
#include "trace/values/iterators.h"

namespace bytegraph::trace {

namespace {

PyObject* module_attr(const char* module, const char* name) {
  py::Ref<> imported = check(PyImport_ImportModule(module));
  return check(PyObject_GetAttrString(imported.get(), name)).release();  // kept for the process
}

PyObject* partial_type() {
  static PyObject* type = module_attr("functools", "partial");
  return type;
}
PyObject* itemgetter_type() {
  static PyObject* type = module_attr("operator", "itemgetter");
  return type;
}
PyObject* attrgetter_type() {
  static PyObject* type = module_attr("operator", "attrgetter");
  return type;
}

ValuePtr make_partial(const ValuePtr& function, const Args& args, const KwArgs& keywords) {
  // partial(partial(f, a), b) is partial(f, a, b), as CPython flattens it.
  if (auto* inner = dynamic_cast<PartialValue*>(function.get())) {
    Args all = inner->args();
    all.insert(all.end(), args.begin(), args.end());
    KwArgs merged = inner->keywords();
    for (const auto& [name, value] : keywords) assign_named(merged, name, value);
    return std::make_shared<PartialValue>(inner->function(), std::move(all), std::move(merged));
  }
  return std::make_shared<PartialValue>(function, args, keywords);
}

// itemgetter(*keys) / attrgetter(*names) applied to one object.
class GetterValue : public Value {
 public:
  GetterValue(bool items, Args keys, guards::SourcePtr source = nullptr)
      : Value(std::move(source)), items_(items), keys_(std::move(keys)) {}
  std::string repr() const override {
    std::string text = items_ ? "ItemGetterVariable(" : "AttrGetterVariable(";
    for (size_t i = 0; i < keys_.size(); ++i) text += (i ? ", " : "") + keys_[i]->repr();
    return text + ")";
  }
  PyObject* python_type() const override { return items_ ? itemgetter_type() : attrgetter_type(); }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    if (args.size() != 1 || !kwargs.empty()) unsupported("bad_call", repr() + " takes one argument");
    Args results;
    for (const auto& key : keys_) results.push_back(items_ ? args[0]->get_item(tracer, key) : read_path(tracer, args[0], key));
    if (results.size() == 1) return results[0];
    return std::make_shared<SequenceValue>(false, std::move(results));
  }

 private:
  static ValuePtr read_path(Tracer& tracer, ValuePtr object, const ValuePtr& path) {
    std::string dotted = PyUnicode_AsUTF8(path->constant());
    size_t start = 0;
    while (true) {
      size_t dot = dotted.find('.', start);
      object = object->get_attr(tracer, dotted.substr(start, dot - start));
      if (dot == std::string::npos) return object;
      start = dot + 1;
    }
  }

  bool items_;
  Args keys_;
};

// The constructors themselves: functools.partial(f, ...), operator.itemgetter(k, ...).
class FunctionalClassValue : public Value {
 public:
  FunctionalClassValue(py::Ref<> type, guards::SourcePtr source) : Value(std::move(source)), type_(std::move(type)) {}
  std::string repr() const override { return "ClassVariable(" + std::string(((PyTypeObject*)type_.get())->tp_name) + ")"; }
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(type_.get()); }
  PyObject* real_object() const override { return type_.get(); }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer&, const Args& args, const KwArgs& kwargs) override {
    if (type_.get() == partial_type()) {
      if (args.empty()) unsupported("bad_call", "partial() needs a function");
      return make_partial(args[0], Args(args.begin() + 1, args.end()), kwargs);
    }
    if (args.empty() || !kwargs.empty()) unsupported("bad_call", repr() + " arguments");
    bool items = type_.get() == itemgetter_type();
    for (const auto& key : args) {
      if (!key->is_constant()) unsupported("unsupported_call", repr() + " of " + key->repr());
      if (!items && !PyUnicode_Check(key->constant())) unsupported("bad_call", "attribute name must be a string");
    }
    return std::make_shared<GetterValue>(items, args);
  }

 private:
  py::Ref<> type_;
};

}  // namespace

std::string PartialValue::repr() const {
  std::string text = "FunctoolsPartialVariable(" + function_->repr();
  for (const auto& arg : args_) text += ", " + arg->repr();
  for (const auto& [name, value] : keywords_) text += ", " + name + "=" + value->repr();
  return text + ")";
}

PyObject* PartialValue::python_type() const { return partial_type(); }

ValuePtr PartialValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  Args all = args_;
  all.insert(all.end(), args.begin(), args.end());
  KwArgs merged = keywords_;
  for (const auto& [name, value] : kwargs) assign_named(merged, name, value);
  return function_->call(tracer, all, merged);
}

ValuePtr PartialValue::get_attr(Tracer&, const std::string& name) {
  if (name == "func") return function_;
  if (name == "args") return std::make_shared<SequenceValue>(false, args_);
  if (name == "keywords") {
    auto dict = std::make_shared<DictValue>();
    for (const auto& [key, value] : keywords_) dict->set_item(check(PyUnicode_FromString(key.c_str())).get(), value);
    return dict;
  }
  unsupported("unsupported_attribute", repr() + "." + name);
}

ValuePtr wrap_functional(Tracer& tracer, PyObject* real, const guards::SourcePtr& source) {
  using K = GuardLog::Kind;
  if (real == partial_type() || real == itemgetter_type() || real == attrgetter_type()) {
    tracer.guards.add(K::Id, source, real);
    return std::make_shared<FunctionalClassValue>(py::Ref<>::newref(real), source);
  }
  PyObject* type = (PyObject*)Py_TYPE(real);
  if (type == partial_type()) {
    // What a call relies on: the function and the bound arguments, each guarded where it is.
    tracer.guards.add(K::Type, source, type);
    auto attr = [&](const char* name) { return source ? guards::attr_source(source, name) : nullptr; };
    py::Ref<> function = check(PyObject_GetAttrString(real, "func"));
    py::Ref<> args = check(PyObject_GetAttrString(real, "args"));
    py::Ref<> keywords = check(PyObject_GetAttrString(real, "keywords"));
    ValuePtr function_value = tracer.wrap(function.get(), attr("func"));
    ValuePtr args_value = tracer.wrap(args.get(), attr("args"));
    ValuePtr keywords_value = tracer.wrap(keywords.get(), attr("keywords"));
    auto* bound = dynamic_cast<SequenceValue*>(args_value.get());
    auto* named = dynamic_cast<DictValue*>(keywords_value.get());
    if (!bound || !named) throw InternalError("a partial's args and keywords are a tuple and a dict");
    KwArgs kwargs;
    for (size_t i = 0; i < named->keys.size(); ++i) kwargs.emplace_back(py_str(named->keys[i].get()), named->values[i]);
    return std::make_shared<PartialValue>(function_value, bound->items, std::move(kwargs), source);
  }
  if (type == itemgetter_type() || type == attrgetter_type()) {
    // Immutable: its identity pins the keys, read once from __reduce__ (type, keys).
    py::Ref<> reduced = check(PyObject_CallMethod(real, "__reduce__", nullptr));
    PyObject* keys = PyTuple_Check(reduced.get()) && PyTuple_GET_SIZE(reduced.get()) >= 2 ? PyTuple_GET_ITEM(reduced.get(), 1) : nullptr;
    if (keys == nullptr || !PyTuple_Check(keys)) return nullptr;
    Args values;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); ++i) {
      PyObject* key = PyTuple_GET_ITEM(keys, i);
      if (classify(key) != ObjectKind::Constant && !PyTuple_Check(key)) return nullptr;
      values.push_back(ConstantValue::make(py::Ref<>::newref(key)));
    }
    tracer.guards.add(K::Id, source, real);
    return std::make_shared<GetterValue>(type == itemgetter_type(), std::move(values), source);
  }
  return nullptr;
}

ValuePtr call_reduce(Tracer& tracer, PyObject* callable, const Args& args, const KwArgs& kwargs) {
  static PyObject* reduce = module_attr("functools", "reduce");
  if (callable != reduce) return nullptr;
  if (!kwargs.empty()) raise_error("bad_call", PyExc_TypeError, "reduce() takes no keyword arguments");
  if (args.size() < 2 || args.size() > 3)
    raise_error("bad_call", PyExc_TypeError, std::string("reduce expected at ") + (args.size() < 2 ? "least 2" : "most 3") +
                                                 " arguments, got " + std::to_string(args.size()));
  // Lazily, as CPython consumes the iterable: a generator's effects happen between the calls.
  ValuePtr iterator = iterate(tracer, args[1], "reduce");
  ValuePtr result = args.size() == 3 ? args[2] : iterator->next_item(tracer);
  if (!result) raise_error("python_error", PyExc_TypeError, "reduce() of empty iterable with no initial value");
  while (ValuePtr item = iterator->next_item(tracer)) result = args[0]->call(tracer, {result, item}, {});
  return result;
}

}  // namespace bytegraph::trace
