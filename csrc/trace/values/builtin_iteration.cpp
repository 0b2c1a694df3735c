// Iterating builtins: see values/builtin_iteration.h.
#include "trace/values/builtin_iteration.h"

#include <cstring>

#include "trace/operators.h"
#include "trace/values/generators.h"
#include "trace/values/iterators.h"
#include "trace/values/list_methods.h"
#include "trace/values/sets.h"

namespace bytegraph::trace {

namespace {

PyObject* builtin(const char* name) {
  static PyObject* module = check(PyImport_ImportModule("builtins")).release();  // kept for the process
  py::Ref<> object = check(PyObject_GetAttrString(module, name));
  return object.get();  // the module keeps it alive
}

bool is(PyObject* function, const char* name) { return function == builtin(name); }

ValuePtr make_bool(bool value) { return ConstantValue::make(py::Ref<>::newref(value ? Py_True : Py_False)); }

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
    unsupported("stop_iteration", "next() on an exhausted iterator");
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
  if (is(function, "enumerate") && !args.empty() && args.size() <= 2 && kwargs.empty() && any_lazy({args[0]})) {
    long start = 0;
    if (args.size() == 2) {
      if (!args[1]->is_constant() || !PyLong_Check(args[1]->constant())) unsupported("unsupported_call", "enumerate() start");
      start = PyLong_AsLong(args[1]->constant());
    }
    return make_lazy_enumerate(tracer, args[0], start);
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
