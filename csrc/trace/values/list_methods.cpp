// List methods and sorting: see values/list_methods.h.
#include "trace/values/list_methods.h"

#include "python/import.h"
#include "trace/symbolic.h"
#include "trace/operators.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

bool is_list_method(const std::string& name, bool is_list) {
  if (!is_list) return false;
  static const char* names[] = {"copy", "reverse", "sort", "clear", "remove"};
  for (const char* known : names)
    if (name == known) return true;
  return false;
}

Args sort_items(Tracer& tracer, const Args& items, const ValuePtr& key, bool reverse) {
  py::Ref<> keys = check(PyList_New(static_cast<Py_ssize_t>(items.size())));
  for (size_t i = 0; i < items.size(); ++i) {
    ValuePtr sort_key = key ? key->call(tracer, {items[i]}, {}) : items[i];
    py::Ref<> real = constant_of(sort_key);
    if (!real) unsupported("unsupported_call", "sorting by " + sort_key->repr() + ", which is not a constant");
    PyList_SET_ITEM(keys.get(), static_cast<Py_ssize_t>(i), real.release());
  }
  // sorted(range(n), key=keys.__getitem__, reverse=reverse): the permutation CPython's sort
  // makes (stable, reverse kept stable, its comparisons and their errors).
  PyObject* sorted = builtin_object("sorted");
  py::Ref<> indices = check(PyObject_CallFunction((PyObject*)&PyRange_Type, "n", static_cast<Py_ssize_t>(items.size())));
  py::Ref<> getter = check(PyObject_GetAttrString(keys.get(), "__getitem__"));
  py::Ref<> args = check(PyTuple_Pack(1, indices.get()));
  py::Ref<> kwargs = check(PyDict_New());
  check_status(PyDict_SetItemString(kwargs.get(), "key", getter.get()));
  check_status(PyDict_SetItemString(kwargs.get(), "reverse", reverse ? Py_True : Py_False));
  py::Ref<> order = check(PyObject_Call(sorted, args.get(), kwargs.get()));
  Args result;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order.get()); ++i)
    result.push_back(items[PyLong_AsSsize_t(PyList_GET_ITEM(order.get(), i))]);
  return result;
}

namespace {

py::Ref<> index_range(Py_ssize_t start, Py_ssize_t count) {
  py::Ref<> indices = check(PyList_New(count));
  for (Py_ssize_t i = 0; i < count; ++i) PyList_SET_ITEM(indices.get(), i, check(PyLong_FromSsize_t(start + i)).release());
  return indices;
}

}  // namespace

void assign_list_item(Tracer& tracer, const ValuePtr& list, const ValuePtr& symbolic_key, const ValuePtr& value) {
  auto& seq = dynamic_cast<SequenceValue&>(*list);
  ValuePtr key = concrete_key(tracer, symbolic_key, "assigning an item of a list needs a concrete index");
  if (!key->is_constant()) unsupported("unsupported_subscript", "assigning " + list->repr() + "[" + key->repr() + "]");
  // The assignment runs for real on a list of the items' positions; what it leaves maps back
  // to the items (old positions) and the new values (positions past the end).
  const auto size = static_cast<Py_ssize_t>(seq.items.size());
  py::Ref<> positions = index_range(0, size);
  Args assigned;
  int status;
  if (value == nullptr) {
    status = PyObject_DelItem(positions.get(), key->constant());
  } else if (PySlice_Check(key->constant())) {
    auto items = value->unpack(tracer);
    if (!items) unsupported("unsupported_subscript", "assigning the items of " + value->repr() + " to a slice of a list");
    assigned = *items;
    py::Ref<> replacement = index_range(size, static_cast<Py_ssize_t>(assigned.size()));
    status = PyObject_SetItem(positions.get(), key->constant(), replacement.get());
  } else {
    assigned = {value};
    py::Ref<> position = check(PyLong_FromSsize_t(size));
    status = PyObject_SetItem(positions.get(), key->constant(), position.get());
  }
  if (status < 0) raise_folded_error(PythonError::fetch(), "list assignment");
  Args result;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(positions.get()); ++i) {
    Py_ssize_t at = PyLong_AsSsize_t(PyList_GET_ITEM(positions.get(), i));
    result.push_back(at < size ? seq.items[at] : assigned[at - size]);
  }
  tracer.will_mutate(list);
  seq.items = std::move(result);
}

ValuePtr call_list_method(Tracer& tracer, const std::shared_ptr<SequenceValue>& list, const std::string& name,
                          const Args& args, const KwArgs& kwargs) {
  if (!is_list_method(name, list->is_list())) return nullptr;
  if (name == "copy" && args.empty() && kwargs.empty()) return std::make_shared<SequenceValue>(true, list->items);
  if (name == "sort" && args.empty()) {
    ValuePtr key;
    bool reverse = false;
    for (const auto& [keyword, value] : kwargs) {
      if (keyword == "key") {
        if (!(value->is_constant() && value->constant() == Py_None)) key = value;
      } else if (keyword == "reverse" && value->is_constant()) {
        reverse = value->truthy(tracer);
      } else {
        unsupported("unsupported_call", "list.sort with " + keyword + "=" + value->repr());
      }
    }
    Args sorted = sort_items(tracer, list->items, key, reverse);
    tracer.will_mutate(list);
    list->items = std::move(sorted);
    return ConstantValue::none();
  }
  if (!kwargs.empty()) return nullptr;
  if (name == "reverse" && args.empty()) {
    tracer.will_mutate(list);
    std::reverse(list->items.begin(), list->items.end());
    return ConstantValue::none();
  }
  if (name == "clear" && args.empty()) {
    tracer.will_mutate(list);
    list->items.clear();
    return ConstantValue::none();
  }
  if (name == "remove" && args.size() == 1) {
    for (size_t i = 0; i < list->items.size(); ++i) {
      if (member_equal(tracer, list->items[i], args[0])) {
        tracer.will_mutate(list);
        list->items.erase(list->items.begin() + static_cast<long>(i));
        return ConstantValue::none();
      }
    }
    raise_error("value_error", PyExc_ValueError, "list.remove(x): x not in list");
  }
  return nullptr;
}

}  // namespace bytegraph::trace
