// The Value base: defaults that decline, and the shared helpers.
#include "trace/value.h"

#include <algorithm>

#include "trace/symbolic.h"
#include "trace/tracer.h"
#include "trace/values/dict_views.h"
#include "trace/values/exceptions.h"
#include "trace/values/sets.h"

namespace bytegraph::trace {

void unsupported(const std::string& kind, const std::string& message) { throw Unsupported(kind, message); }

std::string py_repr(PyObject* object) {
  PyObject* text = PyObject_Repr(object);
  if (text == nullptr) {
    PyErr_Clear();
    return "<unrepresentable>";
  }
  py::Ref<> owned = py::Ref<>::steal(text);
  const char* utf8 = PyUnicode_AsUTF8(text);
  if (utf8 == nullptr) {
    PyErr_Clear();
    return "<unrepresentable>";
  }
  return utf8;
}

std::string py_str(PyObject* object) {
  if (PyUnicode_Check(object)) return PyUnicode_AsUTF8(object);
  return py_repr(object);
}

PyObject* Value::constant() const { throw InternalError("constant() on non-constant " + repr()); }

ValuePtr Value::get_attr(Tracer&, const std::string& name) {
  unsupported("unsupported_attribute", "getattr(" + repr() + ", '" + name + "')");
}

ValuePtr builtin_method_attribute(Tracer&, const ValuePtr& self, const std::string& method, const std::string& name) {
  if (name == "__name__") return ConstantValue::make(check(PyUnicode_FromString(method.c_str())));
  if (name == "__self__") return self;
  if (name == "__qualname__") {
    // Named after the builtin base that defines it (set.add on a set subclass is "set.add").
    auto* type = reinterpret_cast<PyTypeObject*>(self->python_type());
    while (type && PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE)) type = type->tp_base;
    return ConstantValue::make(check(PyUnicode_FromString(((type ? type->tp_name : "object") + std::string(".") + method).c_str())));
  }
  unsupported("unsupported_attribute", "getattr(" + self->repr() + "." + method + ", '" + name + "')");
}

void Value::set_attr(Tracer&, const std::string& name, const ValuePtr&) {
  unsupported("side_effect", "setting attribute '" + name + "' of " + repr());
}

void Value::del_attr(Tracer&, const std::string& name) {
  unsupported("side_effect", "deleting attribute '" + name + "' of " + repr());
}

ValuePtr Value::call(Tracer&, const Args&, const KwArgs&) {
  unsupported("unsupported_call", "calling " + repr());
}

py::Ref<> Value::as_graph_arg(Tracer&, ArgMode) const {
  unsupported("unsupported_graph_arg", repr() + " as an argument of a graph operation");
}

bool Value::truthy(Tracer&) const {
  // Functions, classes and other objects whose type defines neither __bool__ nor __len__ are
  // true (a function held in an attribute: `if self.activation:`).
  PyObject* known_type = python_type();
  if (known_type == nullptr && real_object() != nullptr) known_type = reinterpret_cast<PyObject*>(Py_TYPE(real_object()));
  if (auto* type = reinterpret_cast<PyTypeObject*>(known_type)) {
    bool has_bool = type->tp_as_number && type->tp_as_number->nb_bool;
    bool has_len = (type->tp_as_mapping && type->tp_as_mapping->mp_length) ||
                   (type->tp_as_sequence && type->tp_as_sequence->sq_length);
    if (!has_bool && !has_len && !PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE)) return true;
  }
  unsupported("unsupported_branch", "truth value of " + repr());
}

std::optional<Args> Value::unpack(Tracer&) { return std::nullopt; }

ValuePtr Value::get_item(Tracer&, const ValuePtr& key) {
  unsupported("unsupported_subscript", repr() + "[" + key->repr() + "]");
}

ValuePtr NullValue::get() {
  static ValuePtr null = std::make_shared<NullValue>();
  return null;
}

// ---- constants ------------------------------------------------------------------------

ValuePtr ConstantValue::make(py::Ref<> object, guards::SourcePtr source) {
  return std::make_shared<ConstantValue>(std::move(object), std::move(source));
}

ValuePtr ConstantValue::none() {
  static ValuePtr none = make(py::Ref<>::newref(Py_None));
  return none;
}

std::optional<codegen::OutputPlan> Value::remake(PlanWriter&) { return std::nullopt; }

ValuePtr make_bool(bool value) { return ConstantValue::make(py::Ref<>::newref(value ? Py_True : Py_False)); }

std::string ConstantValue::repr() const { return "ConstantVariable(" + py_repr(object_.get()) + ")"; }

namespace {

// `constant.__iter__`: called, an iterator over the constant's items, as iter(constant).
class ConstantIterMethodValue : public Value {
 public:
  explicit ConstantIterMethodValue(ValuePtr constant) : constant_(std::move(constant)) {}
  std::string repr() const override { return "GetAttrVariable(" + constant_->repr() + ", __iter__)"; }
  std::pair<ValuePtr, std::string> bound_attribute() const override { return {constant_, "__iter__"}; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    if (!args.empty() || !kwargs.empty()) raise_error("bad_call", PyExc_TypeError, "__iter__() takes no arguments");
    ValuePtr iterator = iterator_over(tracer, constant_);
    if (!iterator) unsupported("unsupported_iteration", "iterating over " + constant_->repr());
    return iterator;
  }

 private:
  ValuePtr constant_;
};

}  // namespace

ValuePtr ConstantValue::get_attr(Tracer& tracer, const std::string& name) {
  // Attributes of immutable constants are constants (or bound methods of them, which fold
  // when called on constants); an iterator is state, made as iter() makes it.
  if (name == "__iter__" && PyObject_HasAttrString(object_.get(), "__iter__"))
    return std::make_shared<ConstantIterMethodValue>(shared_from_this());
  PyObject* attribute = PyObject_GetAttrString(object_.get(), name.c_str());
  if (attribute == nullptr) {
    PythonError error = PythonError::fetch();
    raise_folded_error(error, error.what());
  }
  py::Ref<> owned = py::Ref<>::steal(attribute);
  if (PyMethod_Check(attribute)) {
    // A method of one of torch's opaque objects (a placement, a device mesh): inlined where it
    // is Python, folded where the type says running it is safe, else a break (classify's rules).
    py::Ref<> opaque = check(PyObject_CallOneArg(Bridge::get().is_opaque_object.get(), object_.get()));
    if (opaque.get() == Py_True) return tracer.wrap(attribute, nullptr);
  }
  if (PyCallable_Check(attribute) && !PyType_Check(attribute))
    return std::make_shared<BuiltinValue>(std::move(owned));
  return ConstantValue::make(std::move(owned));
}

py::Ref<> ConstantValue::as_graph_arg(Tracer&, ArgMode) const { return object_.copy(); }

bool ConstantValue::truthy(Tracer&) const {
  int result = PyObject_IsTrue(object_.get());
  check_status(result);
  return result == 1;
}

std::optional<Args> ConstantValue::unpack(Tracer&) {
  PyObject* object = object_.get();
  if (!(PyTuple_Check(object) || PyList_Check(object) || PyUnicode_Check(object) ||
        PyRange_Check(object) || PyBytes_Check(object) || PyAnySet_Check(object)))
    return std::nullopt;
  py::Ref<> items = check(PySequence_List(object));
  Args values;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.get()); ++i)
    values.push_back(ConstantValue::make(py::Ref<>::newref(PyList_GET_ITEM(items.get(), i))));
  return values;
}

ValuePtr ConstantValue::get_item(Tracer& tracer, const ValuePtr& symbolic_key) {
  ValuePtr key = concrete_key(tracer, symbolic_key, "indexing a constant needs a concrete index");
  if (!key->is_constant()) unsupported("unsupported_subscript", repr() + "[" + key->repr() + "]");
  PyObject* item = PyObject_GetItem(object_.get(), key->constant());
  if (item == nullptr) {
    PythonError error = PythonError::fetch();
    raise_folded_error(error, error.what());
  }
  return ConstantValue::make(py::Ref<>::steal(item));
}

// ---- iterators and cells --------------------------------------------------------------

std::string IteratorValue::repr() const {
  return "ListIteratorVariable(length=" + std::to_string(items().size()) + ", index=" +
         std::to_string(position_) + ")";
}

ValuePtr Value::next_item(Tracer&) { unsupported("unsupported_iteration", "next() of " + repr()); }

ValuePtr IteratorValue::next_item(Tracer& tracer) {
  if (watched_ && watched_->keys.size() != watched_size_)
    unsupported("dict_changed_size", "a loop over a dict whose size changed (RuntimeError when run)");
  tracer.journal.save(shared_from_this());
  return next();
}

namespace {

// `iterator.__setstate__(index)` of a list's iterator (what a resume function's prologue does,
// through list_iterator_at): moves it to the index, clamped to the list as CPython does.
class IteratorSetStateValue : public Value {
 public:
  explicit IteratorSetStateValue(std::shared_ptr<IteratorValue> iterator) : iterator_(std::move(iterator)) {}
  std::string repr() const override { return "GetAttrVariable(" + iterator_->repr() + ", __setstate__)"; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    if (args.size() != 1 || !kwargs.empty()) unsupported("bad_call", "__setstate__ takes one argument");
    ValuePtr index = specialize(tracer, args[0], "the index of a list iterator");
    if (!index->is_constant() || !PyLong_Check(index->constant()))
      unsupported("unsupported_call", repr() + " with " + args[0]->repr());
    const long wanted = PyLong_AsLong(index->constant());
    if (wanted == -1 && PyErr_Occurred()) throw_python_error();
    tracer.journal.save(iterator_);
    iterator_->set_position(static_cast<size_t>(std::clamp<long>(wanted, 0, static_cast<long>(iterator_->size()))));
    return ConstantValue::none();
  }

 private:
  std::shared_ptr<IteratorValue> iterator_;
};

class IteratorLengthHintValue : public Value {
 public:
  explicit IteratorLengthHintValue(std::shared_ptr<IteratorValue> iterator) : iterator_(std::move(iterator)) {}
  std::string repr() const override { return "GetAttrVariable(" + iterator_->repr() + ", __length_hint__)"; }
  ValuePtr call(Tracer&, const Args& args, const KwArgs& kwargs) override {
    if (!args.empty() || !kwargs.empty()) raise_error("bad_call", PyExc_TypeError, "__length_hint__() takes no arguments");
    const size_t size = iterator_->size(), position = iterator_->position();
    return ConstantValue::make(check(PyLong_FromSize_t(position < size ? size - position : 0)));
  }

 private:
  std::shared_ptr<IteratorValue> iterator_;
};

// type(iter(x)) for x a builtin container, or x itself where it is a constant.
PyObject* builtin_iterator_type(const ValuePtr& iterable) {
  static auto type_of_iter = [](PyObject* container) {
    py::Ref<> iterator = check(PyObject_GetIter(container));
    return reinterpret_cast<PyObject*>(Py_TYPE(iterator.get()));  // a static builtin type
  };
  static PyObject* list_iterator = type_of_iter(check(PyList_New(0)).get());
  static PyObject* tuple_iterator = type_of_iter(check(PyTuple_New(0)).get());
  static PyObject* dict_iterator = type_of_iter(check(PyDict_New()).get());
  static PyObject* set_iterator = type_of_iter(check(PySet_New(nullptr)).get());
  if (iterable->is_constant()) {
    py::Ref<> iterator = py::Ref<>::steal(PyObject_GetIter(iterable->constant()));
    if (!iterator) {
      PyErr_Clear();
      return nullptr;
    }
    PyTypeObject* type = Py_TYPE(iterator.get());
    return PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE) ? nullptr : reinterpret_cast<PyObject*>(type);
  }
  if (auto* seq = dynamic_cast<SequenceValue*>(iterable.get())) return seq->is_list() ? list_iterator : tuple_iterator;
  if (dynamic_cast<DictValue*>(iterable.get())) return dict_iterator;
  if (dynamic_cast<SetValue*>(iterable.get())) return set_iterator;
  return nullptr;
}

}  // namespace

ValuePtr IteratorValue::get_attr(Tracer& tracer, const std::string& name) {
  if (name == "__setstate__" && list_ && !enumerating_)
    return std::make_shared<IteratorSetStateValue>(std::static_pointer_cast<IteratorValue>(shared_from_this()));
  // The builtin iterators' __length_hint__: the items left.
  if (name == "__length_hint__" && type_ && !enumerating_ && _PyType_Lookup(reinterpret_cast<PyTypeObject*>(type_.get()), check(PyUnicode_InternFromString("__length_hint__")).get()))
    return std::make_shared<IteratorLengthHintValue>(std::static_pointer_cast<IteratorValue>(shared_from_this()));
  return Value::get_attr(tracer, name);
}

ValuePtr IteratorValue::item_at(size_t index) const {
  if (!enumerating_) return items()[index];
  ValuePtr number = ConstantValue::make(check(PyLong_FromLong(enumerate_start_ + static_cast<long>(index))));
  return std::make_shared<SequenceValue>(false, Args{number, items()[index]});
}

ValuePtr IteratorValue::next() {
  if (position_ >= items().size()) return nullptr;
  return item_at(position_++);
}

std::optional<Args> IteratorValue::unpack(Tracer& tracer) {
  tracer.journal.save(shared_from_this());
  Args rest;
  for (; position_ < items().size(); ++position_) rest.push_back(item_at(position_));
  return rest;
}

ValuePtr iterator_over(Tracer& tracer, const ValuePtr& iterable) {
  if (auto* seq = dynamic_cast<SequenceValue*>(iterable.get()); seq && seq->is_list()) {
    auto iterator = std::make_shared<IteratorValue>(std::static_pointer_cast<SequenceValue>(iterable));
    iterator->set_python_type(builtin_iterator_type(iterable));
    return iterator;
  }
  auto items = iterable->unpack(tracer);
  if (!items) return nullptr;
  auto iterator = std::make_shared<IteratorValue>(std::move(*items));
  if (PyObject* type = builtin_iterator_type(iterable)) iterator->set_python_type(type);
  if (dynamic_cast<DictValue*>(iterable.get())) iterator->watch(std::static_pointer_cast<DictValue>(iterable));
  if (auto* view = dynamic_cast<DictViewValue*>(iterable.get())) iterator->watch(view->dict());
  return iterator;
}

std::string CellValue::repr() const {
  return "CellVariable(" + (contents ? contents->repr() : std::string("empty")) + ")";
}

}  // namespace bytegraph::trace
