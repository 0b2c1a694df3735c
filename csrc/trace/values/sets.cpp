// Sets built in traced code: see values/sets.h.
#include "trace/values/sets.h"

#include "trace/operators.h"
#include "trace/values/dict_views.h"
#include "trace/values/generators.h"
#include "trace/values/iterators.h"
#include "trace/values/keys.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

// A set's items in its iteration order (the private _PySet_NextEntry is gone from 3.13's
// public headers). Each reference keeps its item alive while the caller looks at it.
std::vector<py::Ref<>> set_items(PyObject* set) {
  std::vector<py::Ref<>> items;
  py::Ref<> iterator = check(PyObject_GetIter(set));
  while (PyObject* item = PyIter_Next(iterator.get())) items.push_back(py::Ref<>::steal(item));
  if (PyErr_Occurred()) throw_python_error();
  return items;
}

void add_all(PyObject* target, PyObject* source) {
  for (const py::Ref<>& item : set_items(source)) check_status(PySet_Add(target, item.get()));
}

}  // namespace


namespace {

// The symbolic set behind a set, or behind an instance of a set or frozenset subclass.
SetValue* set_value_of(Tracer& tracer, const ValuePtr& value) {
  if (auto* set = dynamic_cast<SetValue*>(value.get())) return set;
  if (auto* object = dynamic_cast<ObjectValue*>(value.get()); object && object->is_set_subclass())
    return object->set_storage(tracer).get();
  return nullptr;
}

// The real set of keys of a set-like operand (a set, a frozenset constant, a dict's keys
// view), or null. `view` tells whether it was a view (whose algebra always returns a set).
py::Ref<> set_like_keys(Tracer& tracer, const ValuePtr& value, bool* view) {
  *view = false;
  if (SetValue* set = set_value_of(tracer, value)) return set->keys(set->frozen());
  if (value->is_constant() && PyAnySet_Check(value->constant())) return py::Ref<>::newref(value->constant());
  if (auto* keys = dynamic_cast<DictViewValue*>(value.get()); keys && keys->kind() == DictViewValue::Kind::Keys) {
    *view = true;
    return keys->key_set();
  }
  return nullptr;
}

// The keys of any iterable argument of a set method (set.update(list), s.union(gen)).
py::Ref<> iterable_keys(Tracer& tracer, const ValuePtr& value) {
  bool view = false;
  if (py::Ref<> keys = set_like_keys(tracer, value, &view)) return keys;
  Args items = value->is_iterator() ? drain(tracer, *value) : [&] {
    auto unpacked = value->unpack(tracer);
    if (!unpacked && value->is_constant())
      raise_error("python_error", PyExc_TypeError,
                  "'" + std::string(Py_TYPE(value->constant())->tp_name) + "' object is not iterable");
    if (!unpacked) unsupported("unsupported_set", "the items of " + value->repr());
    return *unpacked;
  }();
  return make_set(tracer, false, items)->keys(false);
}

std::vector<const SetValue*> sets_among(Tracer& tracer, const Args& values) {
  std::vector<const SetValue*> sets;
  for (const auto& value : values)
    if (const SetValue* set = set_value_of(tracer, value)) sets.push_back(set);
  return sets;
}

// The result of the set algebra on real key sets, as a symbolic value.
ValuePtr from_keys(Tracer& tracer, py::Ref<> keys, const Args& operands) {
  bool frozen = PyFrozenSet_Check(keys.get());
  auto sources = sets_among(tracer, operands);
  bool constants = true;
  for (const auto* set : sources) constants = constants && set->only_constants();
  if (frozen && constants) return ConstantValue::make(std::move(keys));
  auto result = std::make_shared<SetValue>(frozen);
  result->assign(keys.get(), sources);
  return result;
}

// The set algebra behind an operator.* function: its plain form, and whether the call was
// the in-place one (|=); null for other functions.
binaryfunc algebra(PyObject* function, bool* in_place) {
  static const struct {
    const char *plain_name, *in_place_name;
    binaryfunc op;
  } table[] = {{"or_", "ior", PyNumber_Or}, {"and_", "iand", PyNumber_And},
               {"sub", "isub", PyNumber_Subtract}, {"xor", "ixor", PyNumber_Xor}};
  for (const auto& entry : table) {
    *in_place = function == operator_function(entry.in_place_name);
    if (*in_place || function == operator_function(entry.plain_name)) return entry.op;
  }
  *in_place = false;
  return nullptr;
}

int comparison(PyObject* function) {
  static const std::pair<const char*, int> ops[] = {{"eq", Py_EQ}, {"ne", Py_NE}, {"lt", Py_LT},
                                                    {"le", Py_LE}, {"gt", Py_GT}, {"ge", Py_GE}};
  for (const auto& [name, op] : ops)
    if (function == operator_function(name)) return op;
  return -1;
}


// The set algebra and comparisons behind a set's special methods, as the operator functions
// that set_operator applies.
const char* set_dunder_operator(const std::string& name) {
  static const std::pair<const char*, const char*> table[] = {
      {"__or__", "or_"},   {"__and__", "and_"}, {"__sub__", "sub"},   {"__xor__", "xor"},  {"__ior__", "ior"},
      {"__iand__", "iand"}, {"__isub__", "isub"}, {"__ixor__", "ixor"}, {"__eq__", "eq"},   {"__ne__", "ne"},
      {"__lt__", "lt"},     {"__le__", "le"},     {"__gt__", "gt"},     {"__ge__", "ge"}};
  for (const auto& [dunder, function] : table)
    if (name == dunder) return function;
  return nullptr;
}

bool mutates(const std::string& name) {
  static const char* names[] = {"add", "discard", "remove", "clear", "pop", "update", "intersection_update",
                                "difference_update", "symmetric_difference_update", "__ior__", "__iand__", "__isub__", "__ixor__"};
  for (const char* mutator : names)
    if (name == mutator) return true;
  return false;
}


// `s.add`, `s.union`, ...: a method of a symbolic set.
class SetMethodValue : public Value {
 public:
  SetMethodValue(std::shared_ptr<SetValue> set, std::string name) : set_(std::move(set)), name_(std::move(name)) {}
  std::string repr() const override { return "GetAttrVariable(" + set_->repr() + ", " + name_ + ")"; }
  std::pair<ValuePtr, std::string> bound_attribute() const override { return {set_, name_}; }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override {
    return builtin_method_attribute(tracer, set_, name_, name);
  }

  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    if (!kwargs.empty()) unsupported("unsupported_call", repr() + " with keyword arguments");
    if (name_.rfind("__", 0) == 0 && name_ != "__contains__") return call_set_method(tracer, set_, name_, args);
    SetValue& set = *set_;
    auto mutate = [&] {
      if (set.frozen()) unsupported("unsupported_call", repr() + " on a frozenset");
      tracer.will_mutate(set_);
    };
    if ((name_ == "add" || name_ == "discard" || name_ == "remove") && args.size() == 1) {
      mutate();
      if (name_ == "add") {
        set.add(tracer, args[0]);
      } else if (!set.discard(tracer, args[0]) && name_ == "remove") {
        raise_error("key_error", PyExc_KeyError, args[0]);
      }
      return ConstantValue::none();
    }
    if (name_ == "clear" && args.empty()) {
      mutate();
      set.clear();
      return ConstantValue::none();
    }
    if (name_ == "pop" && args.empty()) {
      mutate();
      auto items = set.unpack(tracer);
      if (items->empty()) raise_error("key_error", PyExc_KeyError, "pop from an empty set");
      set.discard(tracer, items->front());
      return items->front();
    }
    if (name_ == "copy" && args.empty()) return from_keys(tracer, set.keys(set.frozen()), {set_});
    if (name_ == "__contains__" && args.size() == 1) return make_bool(set.contains(tracer, args[0]));
    return call_algebra(tracer, args);
  }

 private:
  // The algebra, with any iterables as arguments (s.union([1], gen)).
  ValuePtr call_algebra(Tracer& tracer, const Args& args) {
    SetValue& set = *set_;
    struct Method {
      const char* name;
      binaryfunc op;
      bool in_place;
    };
    static const Method methods[] = {
        {"union", PyNumber_Or, false}, {"intersection", PyNumber_And, false},
        {"difference", PyNumber_Subtract, false}, {"symmetric_difference", PyNumber_Xor, false},
        {"update", PyNumber_InPlaceOr, true}, {"intersection_update", PyNumber_InPlaceAnd, true},
        {"difference_update", PyNumber_InPlaceSubtract, true},
        {"symmetric_difference_update", PyNumber_InPlaceXor, true}};
    for (const auto& method : methods) {
      if (name_ != method.name) continue;
      if (args.size() != 1 && name_.rfind("symmetric_difference", 0) == 0) wrong_arguments(args.size());
      py::Ref<> keys = set.keys(set.frozen());
      Args operands{set_};
      for (const auto& arg : args) {
        py::Ref<> other = iterable_keys(tracer, arg);
        keys = check(method.op(keys.get(), other.get()));
        operands.push_back(arg);
      }
      if (!method.in_place) return from_keys(tracer, std::move(keys), operands);
      if (set.frozen()) unsupported("unsupported_call", repr() + " on a frozenset");
      tracer.will_mutate(set_);
      set.assign(keys.get(), sets_among(tracer, operands));
      return ConstantValue::none();
    }
    // Over an iterator, CPython stops at the first item that decides (the rest is never
    // produced: a generator's later effects do not happen).
    if ((name_ == "isdisjoint" || name_ == "issuperset") && args.size() == 1 && args[0]->is_iterator()) {
      const bool want_member = name_ == "isdisjoint";
      while (ValuePtr item = args[0]->next_item(tracer))
        if (set.contains(tracer, item) == want_member) return make_bool(false);
      return make_bool(true);
    }
    static const std::pair<const char*, int> predicates[] = {{"issubset", Py_LE}, {"issuperset", Py_GE}};
    for (const auto& [method, op] : predicates) {
      if (name_ != method || args.size() != 1) continue;
      py::Ref<> other = iterable_keys(tracer, args[0]);
      int result = PyObject_RichCompareBool(set.keys(false).get(), other.get(), op);
      check_status(result);
      return make_bool(result == 1);
    }
    if (name_ == "isdisjoint" && args.size() == 1) {
      py::Ref<> other = iterable_keys(tracer, args[0]);
      py::Ref<> common = check(PyNumber_And(set.keys(false).get(), other.get()));
      return make_bool(PySet_GET_SIZE(common.get()) == 0);
    }
    wrong_arguments(args.size());
  }

  // CPython's TypeError for a known method called with the wrong number of arguments.
  [[noreturn]] void wrong_arguments(size_t given) {
    static const char* no_arguments[] = {"clear", "pop", "copy", "__len__", "__iter__"};
    static const char* one_argument[] = {"add", "discard", "remove", "issubset", "issuperset", "isdisjoint", "__contains__",
                                         "symmetric_difference", "symmetric_difference_update"};
    std::string method = std::string(set_->frozen() ? "frozenset" : "set") + "." + name_ + "()";
    for (const char* name : no_arguments)
      if (name_ == name) raise_error("bad_call", PyExc_TypeError, method + " takes no arguments (" + std::to_string(given) + " given)");
    for (const char* name : one_argument)
      if (name_ == name) raise_error("bad_call", PyExc_TypeError, method + " takes exactly one argument (" + std::to_string(given) + " given)");
    unsupported("unsupported_call", repr() + " with " + std::to_string(given) + " arguments");
  }

  std::shared_ptr<SetValue> set_;
  std::string name_;
};

}  // namespace

SetValue::SetValue(bool frozen, guards::SourcePtr source, bool mutable_here)
    : Value(std::move(source)), frozen_(frozen), mutable_here_(mutable_here), keys_(check(PySet_New(nullptr))) {}

std::string SetValue::repr() const {
  std::string text = frozen_ ? "FrozensetVariable({" : "SetVariable({";
  PyObject* key;
  bool first = true;
  for (const py::Ref<>& key_ref : set_items(keys_.get())) {
    key = key_ref.get();
    auto member = members_.find(key);
    text += (first ? "" : ", ") + (member != members_.end() ? member->second->repr() : py_repr(key));
    first = false;
  }
  return text + "})";
}

size_t SetValue::size() const { return static_cast<size_t>(PySet_GET_SIZE(keys_.get())); }


void SetValue::add(Tracer& tracer, const ValuePtr& item) {
  py::Ref<> key = set_key(tracer, item);
  int present = PySet_Contains(keys_.get(), key.get());
  check_status(present);
  if (present) return;  // a set keeps the member it had
  check_status(PySet_Add(keys_.get(), key.get()));
  if (!item->is_constant() && !dynamic_cast<SequenceValue*>(item.get())) members_[key.get()] = item;
}

namespace {

// The key `in`, remove() and discard() look up: a set (unhashable) is looked up as the
// frozenset of its members, as CPython retries it.
py::Ref<> lookup_key(Tracer& tracer, const ValuePtr& item) {
  if (SetValue* set = set_value_of(tracer, item); set && !set->frozen()) return set->keys(true);
  return set_key(tracer, item);
}

}  // namespace

bool SetValue::discard(Tracer& tracer, const ValuePtr& item) {
  py::Ref<> key = lookup_key(tracer, item);
  // The stored key object (an equal constant may be another object).
  PyObject* stored = nullptr;
  PyObject* candidate;
  for (const py::Ref<>& candidate_ref : set_items(keys_.get())) {
    candidate = candidate_ref.get();
    if (candidate == key.get()) {
      stored = candidate;
      continue;
    }
    // == on a tensor member is an op on its fake: identity is all that can match it.
    if (auto member = members_.find(candidate); member != members_.end() && member->second->is_tensor()) continue;
    if (item->is_tensor()) continue;
    int equal = PyObject_RichCompareBool(candidate, key.get(), Py_EQ);
    check_status(equal);
    if (equal) stored = candidate;
  }
  if (stored == nullptr) return false;
  members_.erase(stored);
  check_status(PySet_Discard(keys_.get(), key.get()));
  return true;
}

void SetValue::clear() {
  check_status(PySet_Clear(keys_.get()));
  members_.clear();
}

bool SetValue::contains(Tracer& tracer, const ValuePtr& item) const {
  py::Ref<> key = lookup_key(tracer, item);
  int found = PySet_Contains(keys_.get(), key.get());
  check_status(found);
  return found == 1;
}

py::Ref<> SetValue::keys(bool frozen) const {
  return check(frozen ? PyFrozenSet_New(keys_.get()) : PySet_New(keys_.get()));
}

void SetValue::assign(PyObject* keys, const std::vector<const SetValue*>& sources) {
  std::unordered_map<PyObject*, ValuePtr> members;
  PyObject* key;
  for (const py::Ref<>& key_ref : set_items(keys)) {
    key = key_ref.get();
    for (const auto* source : sources) {
      auto found = source->members_.find(key);
      if (found != source->members_.end()) {
        members[key] = found->second;
        break;
      }
    }
  }
  if (keys != keys_.get()) {
    check_status(PySet_Clear(keys_.get()));
    add_all(keys_.get(), keys);
  }
  members_ = std::move(members);
}

std::optional<Args> SetValue::unpack(Tracer&) {
  for (const auto& member : members_)
    if (member.second->is_tensor())
      unsupported("unsupported_set", "the order of " + repr() + ": a set of tensors is ordered by their addresses at run time");
  Args items;
  PyObject* key;
  for (const py::Ref<>& key_ref : set_items(keys_.get())) {
    key = key_ref.get();
    auto member = members_.find(key);
    items.push_back(member != members_.end() ? member->second : ConstantValue::make(py::Ref<>::newref(key)));
  }
  return items;
}

ValuePtr SetValue::get_attr(Tracer&, const std::string& name) {
  static const char* methods[] = {"add", "discard", "remove", "clear", "pop", "copy", "update", "union",
                                  "intersection", "difference", "symmetric_difference", "intersection_update",
                                  "difference_update", "symmetric_difference_update", "issubset", "issuperset",
                                  "isdisjoint", "__contains__", "__len__", "__iter__", "__or__", "__and__", "__sub__",
                                  "__xor__", "__ior__", "__iand__", "__isub__", "__ixor__", "__eq__", "__ne__", "__lt__",
                                  "__le__", "__gt__", "__ge__"};
  for (const char* method : methods)
    if (name == method) return std::make_shared<SetMethodValue>(std::static_pointer_cast<SetValue>(shared_from_this()), name);
  unsupported("unsupported_attribute", repr() + "." + name);
}

py::Ref<> SetValue::as_graph_arg(Tracer&, ArgMode) const {
  if (!only_constants()) unsupported("unsupported_graph_arg", repr() + " as an argument of a graph operation");
  return keys(frozen_);
}

std::function<void()> SetValue::saved_state() {
  auto keys = std::make_shared<py::Ref<>>(this->keys(false));
  auto members = members_;
  return [this, keys, members] {
    check_status(PySet_Clear(keys_.get()));
    add_all(keys_.get(), keys->get());
    members_ = members;
  };
}

std::shared_ptr<SetValue> make_set(Tracer& tracer, bool frozen, const Args& items) {
  auto set = std::make_shared<SetValue>(frozen);
  for (const auto& item : items) set->add(tracer, item);
  return set;
}

std::shared_ptr<SetValue> set_of_members(Tracer& tracer, bool frozen, PyObject* members, guards::SourcePtr source) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(members); ++i) {
    PyObject* item = PyTuple_GET_ITEM(members, i);
    if (!constant_member(item) && !hashed_by_identity(item)) return nullptr;
  }
  const bool named = static_cast<bool>(source);
  auto set = std::make_shared<SetValue>(frozen, std::move(source), !named);
  // Members are pinned by the set's guard (identity members compare by identity), so they
  // need no source of their own.
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(members); ++i) set->add(tracer, tracer.wrap(PyTuple_GET_ITEM(members, i), nullptr));
  return set;
}

std::shared_ptr<SetValue> wrap_set(Tracer& tracer, PyObject* real, const guards::SourcePtr& source) {
  py::Ref<> members = check(PySequence_Tuple(real));
  std::shared_ptr<SetValue> set = set_of_members(tracer, PyFrozenSet_Check(real), members.get(), source);
  if (!set) return nullptr;
  py::Ref<> snapshot = check(PyTuple_Pack(2, (PyObject*)Py_TYPE(real), members.get()));
  tracer.guards.add(GuardLog::Kind::SetItems, source, snapshot.get());
  return set;
}

bool set_method_mutates(const std::string& name) { return mutates(name); }

ValuePtr call_set_method(Tracer& tracer, const ValuePtr& self, const std::string& name, const Args& args) {
  SetValue* set = set_value_of(tracer, self);
  if (set == nullptr) throw InternalError("call_set_method: not a set");
  if (name == "__len__" && args.empty()) return ConstantValue::make(check(PyLong_FromSize_t(set->size())));
  if (name == "__iter__" && args.empty()) return iterate(tracer, set->shared_from_this(), "iterating");
  if (const char* function = set_dunder_operator(name); function && args.size() == 1) {
    if (ValuePtr result = set_operator(tracer, operator_function(function), {self, args[0]})) return result;
    return ConstantValue::make(py::Ref<>::newref(Py_NotImplemented));
  }
  return set->get_attr(tracer, name)->call(tracer, args, {});
}

ValuePtr set_operator(Tracer& tracer, PyObject* function, const Args& operands) {
  if (operands.size() != 2) return nullptr;
  bool left_view = false, right_view = false;
  py::Ref<> left = set_like_keys(tracer, operands[0], &left_view);
  py::Ref<> right = set_like_keys(tracer, operands[1], &right_view);
  if (!left && !right) return nullptr;
  if (int op = comparison(function); op >= 0) {
    // A set is never equal to something that is not a set (and only ordered against sets).
    if (!left || !right) {
      if (op == Py_EQ || op == Py_NE) return make_bool(op == Py_NE);
      unsupported("unsupported_operator", "ordering a set against a non-set");
    }
    int result = PyObject_RichCompareBool(left.get(), right.get(), op);
    check_status(result);
    return make_bool(result == 1);
  }
  bool in_place = false;
  binaryfunc op = algebra(function, &in_place);
  if (op == nullptr) return nullptr;
  if (!left || !right) {
    // The other operand is no set: a constant or a builtin container has no reflected method.
    const ValuePtr& other = left ? operands[1] : operands[0];
    bool builtin = other->is_constant() || dynamic_cast<SequenceValue*>(other.get()) || dynamic_cast<DictValue*>(other.get());
    if (!builtin) return nullptr;
    static const std::pair<const char*, const char*> symbols[] = {{"or_", "|"}, {"and_", "&"}, {"sub", "-"}, {"xor", "^"},
                                                                  {"ior", "|="}, {"iand", "&="}, {"isub", "-="}, {"ixor", "^="}};
    std::string symbol = "?";
    for (const auto& [name, text] : symbols)
      if (function == operator_function(name)) symbol = text;
    auto type_name = [](const ValuePtr& value) { return std::string(reinterpret_cast<PyTypeObject*>(value->python_type())->tp_name); };
    raise_error("python_error", PyExc_TypeError, "unsupported operand type(s) for " + symbol + ": '" + type_name(operands[0]) +
                                                     "' and '" + type_name(operands[1]) + "'");
  }
  SetValue* target = set_value_of(tracer, operands[0]);
  if (in_place && target && !target->frozen()) {
    // s |= t mutates s; on a frozenset it makes a new one.
    tracer.will_mutate(operands[0]);
    if (target != operands[0].get()) tracer.journal.save(target->shared_from_this());  // a subclass's members
    py::Ref<> keys = check(op(left.get(), right.get()));
    target->assign(keys.get(), sets_among(tracer, operands));
    return operands[0];
  }
  // A view's algebra returns a set whatever the other operand is.
  if (left_view || right_view) {
    left = check(PySet_New(left.get()));
    right = check(PySet_New(right.get()));
  }
  return from_keys(tracer, check(op(left.get(), right.get())), operands);
}

}  // namespace bytegraph::trace
