#include "trace/values/numpy_array.h"
#include "trace/operators.h"

#include "trace/values/dict_views.h"
#include "trace/values/environ.h"
#include "trace/values/instance_dict.h"
#include "trace/values/sets.h"
#include "trace/values/strings.h"

#include <string>
#include <unordered_map>

#include "trace/symbolic.h"
#include "trace/values/exceptions.h"
#include "trace/values/generators.h"
#include "trace/values/keys.h"

namespace bytegraph::trace {

PyObject* operator_function(const char* name) {
  static std::unordered_map<std::string, PyObject*> cache;  // borrowed from the module, kept alive by it
  static PyObject* module = check(PyImport_ImportModule("operator")).release();
  auto found = cache.find(name);
  if (found != cache.end()) return found->second;
  PyObject* function = check(PyObject_GetAttrString(module, name)).release();  // kept for the process
  cache.emplace(name, function);
  return function;
}

py::Ref<> constant_of(const ValuePtr& value) {
  if (value->is_constant()) return py::Ref<>::newref(value->constant());
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get())) {
    py::Ref<> list = check(PyList_New(static_cast<Py_ssize_t>(seq->items.size())));
    for (size_t i = 0; i < seq->items.size(); ++i) {
      py::Ref<> item = constant_of(seq->items[i]);
      if (!item) return nullptr;
      PyList_SET_ITEM(list.get(), i, item.release());
    }
    if (seq->is_list()) return list;
    py::Ref<> tuple = check(PyList_AsTuple(list.get()));
    if (!seq->tuple_type) return tuple;
    return check(PyObject_CallOneArg(named_tuple_constructor(seq->tuple_type.get()).get(), tuple.get()));
  }
  if (auto* dict = dynamic_cast<DictValue*>(value.get())) {
    py::Ref<> result = check(PyDict_New());
    for (size_t i = 0; i < dict->keys.size(); ++i) {
      py::Ref<> item = constant_of(dict->values[i]);
      if (!item) return nullptr;
      check_status(PyDict_SetItem(result.get(), dict->keys[i].get(), item.get()));
    }
    return result;
  }
  if (auto* set = dynamic_cast<SetValue*>(value.get()); set && set->only_constants()) return set->keys(set->frozen());
  return nullptr;
}

namespace {

bool foldable(const ValuePtr& value) {
  if (auto* set = dynamic_cast<SetValue*>(value.get())) return set->only_constants();
  if (value->is_constant()) return true;
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get())) {
    for (const auto& item : seq->items)
      if (!foldable(item)) return false;
    return true;
  }
  if (auto* dict = dynamic_cast<DictValue*>(value.get())) {
    // Keys held by identity (classes) would come back from the fold as objects, not constants.
    for (const auto& key : dict->keys)
      if (!constant_member(key.get())) return false;
    for (const auto& item : dict->values)
      if (!foldable(item)) return false;
    return true;
  }
  return false;
}

}  // namespace

bool all_constant(const Args& args, const KwArgs& kwargs) {
  for (const auto& arg : args)
    if (!foldable(arg)) return false;
  for (const auto& [name, value] : kwargs)
    if (!foldable(value)) return false;
  return true;
}

PyObject* call_with_constants(PyObject* function, const Args& args, const KwArgs& kwargs) {
  py::Ref<> tuple = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i)
    PyTuple_SET_ITEM(tuple.get(), i, constant_of(args[i]).release());
  py::Ref<> dict;
  if (!kwargs.empty()) {
    dict = check(PyDict_New());
    for (const auto& [name, value] : kwargs)
      check_status(PyDict_SetItemString(dict.get(), name.c_str(), constant_of(value).get()));
  }
  return PyObject_Call(function, tuple.get(), dict.get());
}

ValuePtr fold(PyObject* function, const Args& args, const KwArgs& kwargs) {
  PyObject* result = call_with_constants(function, args, kwargs);
  if (result == nullptr) {
    // The real operation raised (1 / 0): the program's handlers see that exception.
    PythonError error = PythonError::fetch();
    raise_folded_error(error, py_repr(function) + " raised " + error.what());
  }
  return from_folded(py::Ref<>::steal(result));
}

ValuePtr from_folded(py::Ref<> result) {
  // Mutable results become symbolic containers, so that later mutation stays symbolic.
  PyObject* object = result.get();
  if (PyList_CheckExact(object)) {
    Args items;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(object); ++i)
      items.push_back(from_folded(py::Ref<>::newref(PyList_GET_ITEM(object, i))));
    return std::make_shared<SequenceValue>(true, std::move(items));
  }
  if (PyDict_CheckExact(object)) {
    auto dict = std::make_shared<DictValue>();
    PyObject *key, *value;
    Py_ssize_t position = 0;
    while (PyDict_Next(object, &position, &key, &value)) dict->set_item(key, from_folded(py::Ref<>::newref(value)));
    return dict;
  }
  if (PyAnySet_CheckExact(object) && !(PyFrozenSet_CheckExact(object) && classify(object) == ObjectKind::Constant)) {
    // A set made by a folded call (set(...) of constants, {1} | {2}): symbolic, so that
    // later set.add() stays symbolic; its members must be constants.
    py::Ref<> members = check(PySequence_List(object));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(members.get()); ++i)
      if (!from_folded(py::Ref<>::newref(PyList_GET_ITEM(members.get(), i)))->is_constant())
        unsupported("unsupported_builtin", "a folded call returned a set of non-constants");
    auto set = std::make_shared<SetValue>(PyFrozenSet_CheckExact(object));
    set->assign(object, {});
    return set;
  }
  if (PyTuple_Check(object) || classify(object) == ObjectKind::Constant) return ConstantValue::make(std::move(result));
  // A class a folded factory made (collections.namedtuple): known by this very object.
  if (PyType_Check(object) && classify(object) == ObjectKind::UserClass) return std::make_shared<ClassValue>(std::move(result), nullptr);
  unsupported("unsupported_builtin", "a folded call returned " + py_repr((PyObject*)Py_TYPE(object)));
}

namespace {

bool is_inplace_operator(PyObject* function) {
  static const char* names[] = {"iadd", "iand", "iconcat", "ifloordiv", "ilshift", "imod", "imul", "imatmul",
                                "ior", "ipow", "irshift", "isub", "itruediv", "ixor"};
  for (const char* name : names)
    if (function == operator_function(name)) return true;
  return false;
}

// `n += t` on an immutable number: Python finds no in-place slot and computes `n + t`. The
// graph records that binary operator (an in-place call on a literal cannot be written as code).
PyObject* number_inplace_as_binary(PyObject* function, const Args& operands) {
  if (!is_inplace_operator(function) || operands.size() != 2) return function;
  const ValuePtr& left = operands[0];
  bool number = dynamic_cast<SymNumberValue*>(left.get()) != nullptr;
  if (left->is_constant()) {
    PyObject* value = left->constant();
    number = PyLong_Check(value) || PyFloat_Check(value) || PyComplex_Check(value);
  }
  if (!number) return function;
  static const std::pair<const char*, const char*> binary[] = {
      {"iadd", "add"}, {"iand", "and_"}, {"ifloordiv", "floordiv"}, {"ilshift", "lshift"}, {"imod", "mod"},
      {"imul", "mul"}, {"imatmul", "matmul"}, {"ior", "or_"}, {"ipow", "pow"}, {"irshift", "rshift"},
      {"isub", "sub"}, {"itruediv", "truediv"}, {"ixor", "xor"}};
  for (const auto& [inplace, plain] : binary)
    if (function == operator_function(inplace)) return operator_function(plain);
  return function;
}

// A constant tuple or list as a symbolic sequence of constants (`(-1,) + shape[1:]` where the
// shape holds symbolic sizes); null for anything else.
std::shared_ptr<SequenceValue> constant_sequence(const ValuePtr& value) {
  if (!value->is_constant()) return nullptr;
  PyObject* object = value->constant();
  if (!PyTuple_Check(object) && !PyList_Check(object)) return nullptr;
  py::Ref<> items = check(PySequence_Fast(object, "a sequence"));
  Args values;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i)
    values.push_back(ConstantValue::make(py::Ref<>::newref(PySequence_Fast_GET_ITEM(items.get(), i))));
  auto sequence = std::make_shared<SequenceValue>(PyList_Check(object), std::move(values));
  if (is_torch_size((PyObject*)Py_TYPE(object))) sequence->tuple_type = py::Ref<>::newref((PyObject*)Py_TYPE(object));
  return sequence;
}

// A tuple made from torch.Size operands is a torch.Size (`size[:-1] + (n,)`, `(n,) + size`).
std::shared_ptr<SequenceValue> sized_like(std::shared_ptr<SequenceValue> result, const SequenceValue* left,
                                          const SequenceValue* right) {
  for (const SequenceValue* operand : {left, right})
    if (operand && operand->is_size()) result->tuple_type = py::Ref<>::newref(operand->tuple_type.get());
  return result;
}

// `int | None`, `TensorMeta | TensorMetadata` (PEP 604): a union of classes (or None), made for
// real where no metaclass overrides `|` (type's own runs no code of the program).
ValuePtr type_union(Tracer& tracer, PyObject* function, const Args& operands) {
  if (function != operator_function("or_") || operands.size() != 2) return nullptr;
  py::Ref<> items[2];
  for (int i = 0; i < 2; ++i) {
    PyObject* real = operands[i]->is_constant() ? operands[i]->constant() : operands[i]->real_object();
    if (real == nullptr) return nullptr;
    PyNumberMethods* number = Py_TYPE(real)->tp_as_number;
    bool plain_class = PyType_Check(real) && number && number->nb_or == PyType_Type.tp_as_number->nb_or;
    if (!plain_class && real != Py_None) return nullptr;
    tracer.pin_identity(operands[i]);
    items[i] = py::Ref<>::newref(real);
  }
  py::Ref<> result = check(PyNumber_Or(items[0].get(), items[1].get()));
  return tracer.wrap(result.get(), nullptr);
}

ValuePtr sequence_operator(Tracer& tracer, PyObject* function, const Args& operands) {
  std::shared_ptr<SequenceValue> left_constant, right_constant;
  auto* left = dynamic_cast<SequenceValue*>(operands[0].get());
  auto* right = operands.size() > 1 ? dynamic_cast<SequenceValue*>(operands[1].get()) : nullptr;
  if (left && !right && operands.size() > 1 && (right_constant = constant_sequence(operands[1]))) right = right_constant.get();
  if (!left && right && (left_constant = constant_sequence(operands[0]))) left = left_constant.get();
  bool add = function == operator_function("add") || function == operator_function("iadd");
  if (add && left && right && left->is_list() == right->is_list()) {
    if (function == operator_function("iadd") && left->is_list()) {
      // list += list extends in place; tuple += tuple makes a new tuple.
      tracer.will_mutate(operands[0]);
      left->items.insert(left->items.end(), right->items.begin(), right->items.end());
      return operands[0];
    }
    Args items = left->items;
    items.insert(items.end(), right->items.begin(), right->items.end());
    return sized_like(std::make_shared<SequenceValue>(left->is_list(), std::move(items)), left, right);
  }
  const bool eq = function == operator_function("eq"), ne = function == operator_function("ne");
  if ((eq || ne) && left && right) {
    // list == list and tuple == tuple (named tuples are tuples): the lengths, then item by item
    // as CPython compares them, identity first; a list never equals a tuple.
    bool equal = left->is_list() == right->is_list() && left->items.size() == right->items.size();
    for (size_t i = 0; equal && i < left->items.size(); ++i) {
      const ValuePtr& a = left->items[i];
      const ValuePtr& b = right->items[i];
      if (a.get() == b.get() || (a->is_constant() && b->is_constant() && a->constant() == b->constant()) ||
          (a->is_tensor() && b->is_tensor() && same_object(tracer, a, b)))
        continue;
      if (a->is_tensor() || b->is_tensor()) unsupported("data_dependent_branch", "== between the tensors of two sequences");
      equal = apply_operator(tracer, operator_function("eq"), {a, b})->truthy(tracer);
    }
    return make_bool(equal == eq);
  }
  bool mul = function == operator_function("mul");
  if (!mul || operands.size() != 2) return nullptr;
  // `xs * n` and `n * xs` repeat the items (n is specialised when symbolic).
  auto* repeated = dynamic_cast<SequenceValue*>(operands[0].get());
  ValuePtr count = operands[1];
  if (!repeated) {
    repeated = dynamic_cast<SequenceValue*>(operands[1].get());
    count = operands[0];
  }
  if (!repeated) return nullptr;
  if (!count->is_constant()) count = concrete_key(tracer, count, "repeating a list or tuple needs a concrete count");
  if (!count->is_constant() || !PyLong_Check(count->constant())) return nullptr;
  long times = PyLong_AsLong(count->constant());
  if (times == -1 && PyErr_Occurred()) throw_python_error();
  Args items;
  for (long i = 0; i < times; ++i) items.insert(items.end(), repeated->items.begin(), repeated->items.end());
  return sized_like(std::make_shared<SequenceValue>(repeated->is_list(), std::move(items)), repeated, nullptr);
}

}  // namespace

ValuePtr apply_operator(Tracer& tracer, PyObject* function, const Args& operands) {
  PyObject* const written = function;  // `n -= obj` names -= in its TypeError
  function = number_inplace_as_binary(function, operands);
  bool constants = true;
  for (const auto& operand : operands) constants = constants && operand->is_constant();
  if (constants) return fold(function, operands);
  // `"..." % value` formats: a tensor's value is data, never a graph operation on strings.
  if (ValuePtr formatted = format_operator(tracer, function, operands)) return formatted;
  // Operators on containers of constants fold too (size[:-1] + (n,), [1] * 3), except the
  // in-place ones on a mutable container: `xs += ys` changes xs itself.
  if (all_constant(operands) && !(is_inplace_operator(function) && !operands[0]->is_constant()))
    return fold(function, operands);
  if (ValuePtr result = numpy_operator(tracer, written, operands)) return result;
  if (ValuePtr result = user_class_operator(tracer, written, operands)) return result;
  if (ValuePtr result = symbolic_operator(tracer, function, operands)) return result;
  for (const auto& operand : operands) {
    if (operand->is_tensor())
      return tracer.record(graph::Op::CallFunction, py::Ref<>::newref(function), operands, {});
  }
  if (ValuePtr result = set_operator(tracer, function, operands)) return result;
  if (ValuePtr result = type_union(tracer, function, operands)) return result;
  if (ValuePtr result = sequence_operator(tracer, function, operands)) return result;
  std::string text = py_repr(function) + " on";
  for (const auto& operand : operands) text += " " + operand->repr();
  unsupported("unsupported_operator", text);
}

bool same_object(Tracer& tracer, const ValuePtr& a, const ValuePtr& b) {
  if (a.get() == b.get()) return true;
  if (a->is_constant() && b->is_constant()) return a->constant() == b->constant();
  if (a->real_object() && b->real_object()) {
    tracer.pin_identity(a);
    tracer.pin_identity(b);
    return a->real_object() == b->real_object();
  }
  auto* ta = dynamic_cast<TensorValue*>(a.get());
  auto* tb = dynamic_cast<TensorValue*>(b.get());
  // The fakes follow the real tensors' identities: an in-place op (`x.add_(1)`, `relu_`) or a
  // no-op conversion (`x.contiguous()`) returns the fake it was given, as the real op does.
  if (ta && tb) return ta->node() == tb->node() || ta->fake() == tb->fake();
  // Different kinds of value (a tensor and None, a list and a constant) are different objects.
  if (a->is_constant() || b->is_constant()) {
    const ValuePtr& constant = a->is_constant() ? a : b;
    const ValuePtr& other = a->is_constant() ? b : a;
    if (constant->constant() == Py_None || other->is_tensor()) return false;
  }
  // An object the trace made is one value: any other value is another object.
  for (const ValuePtr* value : {&a, &b})
    if (auto* object = dynamic_cast<ObjectValue*>(value->get()); object && object->is_new()) return false;
  // Objects of different types are different objects.
  PyObject* type_a = a->python_type();
  PyObject* type_b = b->python_type();
  if (type_a && type_b && type_a != type_b) return false;
  unsupported("unsupported_identity", "cannot decide `is` between " + a->repr() + " and " + b->repr());
}

std::shared_ptr<DictValue> mapping_items(Tracer& tracer, const ValuePtr& mapping) {
  auto* object = dynamic_cast<ObjectValue*>(mapping.get());
  if (object == nullptr) return nullptr;
  // What CPython asks is whether the object has keys: a class that defines it (read through
  // the object, so a change to the class is guarded).
  py::Ref<> name = check(PyUnicode_InternFromString("keys"));
  auto* type = reinterpret_cast<PyTypeObject*>(object->python_type());
  if (_PyType_Lookup(type, name.get()) == nullptr) {
    if (PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE))
      tracer.guards.add(GuardLog::Kind::LacksAttr, guards::class_source(reinterpret_cast<PyObject*>(type)), name.get());
    return nullptr;
  }
  ValuePtr keys = mapping->get_attr(tracer, "keys")->call(tracer, {}, {});
  auto items = std::make_shared<DictValue>();
  auto all = keys->is_iterator() ? std::optional<Args>(drain(tracer, *keys)) : keys->unpack(tracer);
  if (!all) unsupported("unsupported_dict", "the keys " + keys->repr() + " of " + mapping->repr());
  for (const ValuePtr& key : *all)
    items->set_item(dict_key(tracer, key, "unsupported_dict").get(), mapping->get_item(tracer, key));
  return items;
}

bool contains(Tracer& tracer, const ValuePtr& haystack, const ValuePtr& needle) {
  if (haystack->is_constant() && needle->is_constant()) {
    int result = PySequence_Contains(haystack->constant(), needle->constant());
    check_status(result);
    return result == 1;
  }
  if (auto* dict = dynamic_cast<DictValue*>(haystack.get())) {
    return dict->find(dict_key(tracer, needle, "unsupported_operator").get()) >= 0;
  }
  if (auto* set = dynamic_cast<SetValue*>(haystack.get())) return set->contains(tracer, needle);
  if (auto* view = dynamic_cast<DictViewValue*>(haystack.get())) return view->contains(tracer, needle);
  if (auto* attributes = dynamic_cast<InstanceDictValue*>(haystack.get())) return attributes->contains(needle);
  if (auto* environ = dynamic_cast<EnvironValue*>(haystack.get())) return environ->read(tracer, needle) != nullptr;
  if (auto* object = dynamic_cast<ObjectValue*>(haystack.get())) {
    if (ValuePtr found = object->inline_special(tracer, "__contains__", {needle})) return found->truthy(tracer);
    if (ValuePtr items = object->builtin_items(tracer)) return contains(tracer, items, needle);
  }
  if (haystack->is_constant() && PyAnySet_Check(haystack->constant())) {
    if (needle->is_tensor()) unsupported("unsupported_set", "`in` a set with a tensor (" + needle->repr() + ")");
    int found = PySequence_Contains(haystack->constant(), set_key(tracer, needle).get());
    check_status(found);
    return found == 1;
  }
  // A generator or lazy iterator is consumed up to the first match, as `in` does.
  if (haystack->is_iterator() && !dynamic_cast<IteratorValue*>(haystack.get())) {
    while (ValuePtr item = haystack->next_item(tracer))
      if (member_equal(tracer, item, needle)) return true;
    return false;
  }
  if (auto items = haystack->unpack(tracer)) {
    for (const auto& item : *items)
      if (member_equal(tracer, item, needle)) return true;
    return false;
  }
  unsupported("unsupported_operator", "`in` on " + haystack->repr());
}

bool member_equal(Tracer& tracer, const ValuePtr& item, const ValuePtr& needle) {
  if (needle->is_tensor() || item->is_tensor()) {
    // `x in (x, y)` is True by identity before any ==; otherwise == on tensors is data.
    auto* a = dynamic_cast<TensorValue*>(item.get());
    auto* b = dynamic_cast<TensorValue*>(needle.get());
    if (a && b && a->node() == b->node()) return true;
    unsupported("data_dependent_branch", "`in` with a tensor");
  }
  if (item->is_constant() && needle->is_constant()) {
    int equal = PyObject_RichCompareBool(item->constant(), needle->constant(), Py_EQ);
    check_status(equal);
    return equal == 1;
  }
  return same_object(tracer, item, needle);
}

}  // namespace bytegraph::trace
