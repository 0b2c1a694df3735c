// Iterating builtins: see values/builtin_iteration.h.
#include "trace/values/builtin_iteration.h"

#include <cstring>

#include "python/import.h"
#include "trace/operators.h"
#include "trace/values/generators.h"
#include "trace/values/iterators.h"
#include "trace/values/list_methods.h"
#include "trace/values/sets.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {


bool is(PyObject* function, const char* name) { return function == builtin_object(name); }

// The items of an iterable argument (generators and lazy iterators consumed).
Args items_of(Tracer& tracer, const ValuePtr& iterable, const char* what) {
  if (iterable->is_iterator() && !dynamic_cast<IteratorValue*>(iterable.get())) return drain(tracer, *iterable);
  auto items = iterable->unpack(tracer);
  if (!items) unsupported("unsupported_call", std::string(what) + " of " + iterable->repr());
  return *items;
}

// any()/all(): items are taken one at a time and the first decisive one stops the
// iteration, so a generator runs only as far as the real call runs it.
ValuePtr any_or_all(Tracer& tracer, const ValuePtr& iterable, bool any) {
  ValuePtr iterator = iterate(tracer, iterable, any ? "any" : "all");
  while (ValuePtr item = iterator->next_item(tracer))
    if (item->truthy(tracer) == any) return make_bool(any);
  return make_bool(!any);
}

// min()/max() with key=: the first item whose key is smallest (largest), as the builtins pick.
ValuePtr extremum(Tracer& tracer, const Args& items, const ValuePtr& key, const ValuePtr& fallback, bool smallest) {
  if (items.empty()) {
    if (fallback) return fallback;
    raise_error("value_error", PyExc_ValueError, std::string(smallest ? "min" : "max") + "() iterable argument is empty");
  }
  std::vector<py::Ref<>> keys;
  for (const auto& item : items) {
    ValuePtr value = key ? key->call(tracer, {item}, {}) : item;
    py::Ref<> real = constant_of(value);
    if (!real) unsupported("unsupported_call", "min/max by " + value->repr() + ", which is not a constant");
    keys.push_back(std::move(real));
  }
  size_t best = 0;
  for (size_t i = 1; i < keys.size(); ++i) {
    int better = PyObject_RichCompareBool(keys[i].get(), keys[best].get(), smallest ? Py_LT : Py_GT);
    check_status(better);
    if (better) best = i;
  }
  return items[best];
}

bool is_str_join(PyObject* function) {
  if (!PyCFunction_Check(function)) return false;
  PyObject* self = PyCFunction_GET_SELF(function);
  return self && PyUnicode_Check(self) && std::strcmp(reinterpret_cast<PyCFunctionObject*>(function)->m_ml->ml_name, "join") == 0;
}

}  // namespace

ValuePtr call_iteration_builtin(Tracer& tracer, PyObject* function, const Args& args, const KwArgs& kwargs) {
  if (is(function, "iter") && args.size() == 1 && kwargs.empty()) return iterate(tracer, args[0], "iter");
  if (is(function, "next") && (args.size() == 1 || args.size() == 2) && kwargs.empty()) {
    if (!args[0]->is_iterator()) unsupported("unsupported_call", "next() of " + args[0]->repr());
    if (ValuePtr item = args[0]->next_item(tracer)) return item;
    if (args.size() == 2) return args[1];
    // Exhausted: StopIteration, carrying what a generator returned.
    ValuePtr returned;
    if (auto* generator = dynamic_cast<GeneratorValue*>(args[0].get())) returned = generator->returned();
    if (returned && returned->is_constant() && returned->constant() == Py_None) returned = nullptr;
    raise_error("stop_iteration", PyExc_StopIteration, returned);
  }
  if ((is(function, "any") || is(function, "all")) && args.size() == 1 && kwargs.empty() && !all_constant(args))
    return any_or_all(tracer, args[0], is(function, "any"));
  if (is(function, "sorted") && args.size() == 1 && (!all_constant(args, kwargs))) {
    ValuePtr key;
    bool reverse = false;
    for (const auto& [name, value] : kwargs) {
      if (name == "key" && !(value->is_constant() && value->constant() == Py_None)) key = value;
      else if (name == "reverse" && value->is_constant()) reverse = value->truthy(tracer);
      else if (name != "key") unsupported("unsupported_call", "sorted() with " + name + "=" + value->repr());
    }
    return std::make_shared<SequenceValue>(true, sort_items(tracer, items_of(tracer, args[0], "sorted"), key, reverse));
  }
  if ((is(function, "min") || is(function, "max")) && !args.empty() && !kwargs.empty()) {
    ValuePtr key, fallback;
    for (const auto& [name, value] : kwargs) {
      if (name == "key") key = value->is_constant() && value->constant() == Py_None ? nullptr : value;
      else if (name == "default" && args.size() == 1) fallback = value;
      else unsupported("unsupported_call", std::string(is(function, "min") ? "min" : "max") + "() with " + name + "=");
    }
    Args items = args.size() == 1 ? items_of(tracer, args[0], "min/max") : args;
    return extremum(tracer, items, key, fallback, is(function, "min"));
  }
  if (is(function, "reversed") && args.size() == 1 && kwargs.empty()) {
    if (args[0]->is_iterator()) unsupported("unsupported_call", "reversed() of an iterator");
    Args items = items_of(tracer, args[0], "reversed");
    std::reverse(items.begin(), items.end());
    return std::make_shared<IteratorValue>(std::move(items));
  }
  if (is(function, "map") && args.size() >= 2 && kwargs.empty())
    return make_map(tracer, args[0], Args(args.begin() + 1, args.end()));
  if (is(function, "filter") && args.size() == 2 && kwargs.empty()) return make_filter(tracer, args[0], args[1]);
  if (is(function, "zip") && kwargs.empty() && any_lazy(args)) return make_lazy_zip(tracer, args);
  if (is(function, "enumerate") && (args.size() == 1 || args.size() == 2)) {
    ValuePtr start_value = args.size() == 2 ? args[1] : nullptr;
    for (const auto& [name, value] : kwargs) {
      if (name != "start" || start_value) unsupported("bad_call", "enumerate() arguments");
      start_value = value;
    }
    long start = 0;
    if (start_value) {
      if (!start_value->is_constant() || !PyLong_Check(start_value->constant()))
        unsupported("unsupported_call", "enumerate() start " + start_value->repr());
      start = PyLong_AsLong(start_value->constant());
    }
    if (any_lazy({args[0]})) return make_lazy_enumerate(tracer, args[0], start);
    if (auto* seq = dynamic_cast<SequenceValue*>(args[0].get()); seq && seq->is_list())
      return std::make_shared<IteratorValue>(std::static_pointer_cast<SequenceValue>(args[0]), start);
    Args rows;
    for (auto& item : items_of(tracer, args[0], "enumerate"))
      rows.push_back(std::make_shared<SequenceValue>(false, Args{ConstantValue::make(check(PyLong_FromLong(start++))), item}));
    return std::make_shared<IteratorValue>(std::move(rows));
  }
  if ((is(function, "set") || is(function, "frozenset")) && args.size() <= 1 && kwargs.empty()) {
    bool frozen = is(function, "frozenset");
    Args items = args.empty() ? Args{} : items_of(tracer, args[0], frozen ? "frozenset" : "set");
    auto set = make_set(tracer, frozen, items);
    if (frozen && set->only_constants()) return ConstantValue::make(set->keys(true));
    return set;
  }
  // "sep".join(generator): join consumes its argument whole.
  if (is_str_join(function) && args.size() == 1 && kwargs.empty() && args[0]->is_iterator()) {
    Args list{std::make_shared<SequenceValue>(true, items_of(tracer, args[0], "str.join"))};
    if (!all_constant(list)) unsupported("unsupported_format", "joining " + list[0]->repr());
    return fold(function, list);
  }
  return nullptr;
}

}  // namespace bytegraph::trace
