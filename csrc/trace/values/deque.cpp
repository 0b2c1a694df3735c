// collections.deque made in the trace: see values/deque.h.
#include "trace/values/deque.h"

#include "trace/operators.h"
#include "trace/plan_writer.h"
#include "trace/values/exceptions.h"
#include "trace/values/generators.h"

#include <algorithm>

namespace bytegraph::trace {

namespace {

long maxlen_of(const ValuePtr& maxlen) {
  return maxlen->constant() == Py_None ? -1 : PyLong_AsLong(maxlen->constant());
}

long index_of(Tracer& tracer, const ValuePtr& key, size_t size, const char* what) {
  if (!key->is_constant() || !PyLong_Check(key->constant())) {
    if (key->is_constant()) raise_error("python_error", PyExc_TypeError, "sequence index must be integer, not '" +
                                                                            std::string(Py_TYPE(key->constant())->tp_name) + "'");
    unsupported("unsupported_subscript", std::string(what) + " with " + key->repr());
  }
  (void)tracer;
  long index = PyLong_AsLong(key->constant());
  if (index < 0) index += static_cast<long>(size);
  if (index < 0 || index >= static_cast<long>(size)) raise_error("index_error", PyExc_IndexError, "deque index out of range");
  return index;
}

class DequeMethodValue : public Value {
 public:
  DequeMethodValue(std::shared_ptr<DequeValue> deque, std::string name) : deque_(std::move(deque)), name_(std::move(name)) {}
  std::string repr() const override { return "DequeMethodVariable(" + name_ + ")"; }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;

 private:
  void trim_front(Args& items) const {
    long maxlen = maxlen_of(deque_->maxlen);
    while (maxlen >= 0 && static_cast<long>(items.size()) > maxlen) items.erase(items.begin());
  }
  void trim_back(Args& items) const {
    long maxlen = maxlen_of(deque_->maxlen);
    while (maxlen >= 0 && static_cast<long>(items.size()) > maxlen) items.pop_back();
  }
  std::shared_ptr<DequeValue> deque_;
  std::string name_;
};

Args items_of_iterable(Tracer& tracer, const ValuePtr& iterable) {
  std::optional<Args> items = iterable->is_iterator() ? std::optional<Args>(drain(tracer, *iterable)) : iterable->unpack(tracer);
  if (!items) unsupported("unsupported_iteration", "a deque over " + iterable->repr());
  return *items;
}

ValuePtr DequeMethodValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (!kwargs.empty()) unsupported("unsupported_call", "deque." + name_ + " with keyword arguments");
  const std::shared_ptr<SequenceValue>& storage = deque_->storage;
  auto arity = [&](size_t low, size_t high) {
    if (args.size() < low || args.size() > high)
      raise_error("bad_call", PyExc_TypeError, "deque." + name_ + "() takes " + std::to_string(high) + " argument(s)");
  };
  auto change = [&](auto&& edit) {
    Args items = storage->items;
    edit(items);
    tracer.will_mutate(storage);
    storage->items = std::move(items);
    return ConstantValue::none();
  };
  if (name_ == "append") return arity(1, 1), change([&](Args& items) { items.push_back(args[0]); trim_front(items); });
  if (name_ == "appendleft") return arity(1, 1), change([&](Args& items) { items.insert(items.begin(), args[0]); trim_back(items); });
  if (name_ == "extend" || name_ == "extendleft") {
    arity(1, 1);
    auto add = [&](const ValuePtr& item) {
      change([&](Args& items) {
        if (name_ == "extend") {
          items.push_back(item);
          trim_front(items);
        } else {
          items.insert(items.begin(), item);
          trim_back(items);
        }
      });
    };
    if (args[0]->is_iterator()) {
      // One item at a time, as CPython consumes it: a map() whose function reads the deque
      // sees the items added so far.
      while (ValuePtr item = args[0]->next_item(tracer)) add(item);
    } else {
      for (const ValuePtr& item : items_of_iterable(tracer, args[0])) add(item);  // a copy first: d.extend(d)
    }
    return ConstantValue::none();
  }
  if (name_ == "pop" || name_ == "popleft") {
    arity(0, 0);
    if (storage->items.empty()) raise_error("index_error", PyExc_IndexError, "pop from an empty deque");
    ValuePtr item = name_ == "pop" ? storage->items.back() : storage->items.front();
    change([&](Args& items) { name_ == "pop" ? items.pop_back() : void(items.erase(items.begin())); });
    return item;
  }
  if (name_ == "insert") {
    arity(2, 2);
    if (!args[0]->is_constant() || !PyLong_Check(args[0]->constant())) unsupported("unsupported_call", "deque.insert at " + args[0]->repr());
    long maxlen = maxlen_of(deque_->maxlen);
    if (maxlen >= 0 && static_cast<long>(storage->items.size()) >= maxlen)
      raise_error("index_error", PyExc_IndexError, "deque already at its maximum size");
    long size = static_cast<long>(storage->items.size());
    long at = PyLong_AsLong(args[0]->constant());
    if (at < 0) at = std::max(0L, at + size);
    at = std::min(at, size);
    return change([&](Args& items) { items.insert(items.begin() + at, args[1]); });
  }
  if (name_ == "clear") return arity(0, 0), change([](Args& items) { items.clear(); });
  if (name_ == "reverse") return arity(0, 0), change([](Args& items) { std::reverse(items.begin(), items.end()); });
  if (name_ == "rotate") {
    arity(0, 1);
    long steps = 1;
    if (!args.empty()) {
      if (!args[0]->is_constant() || !PyLong_Check(args[0]->constant())) unsupported("unsupported_call", "deque.rotate by " + args[0]->repr());
      steps = PyLong_AsLong(args[0]->constant());
    }
    return change([&](Args& items) {
      if (items.empty()) return;
      long size = static_cast<long>(items.size());
      long shift = ((steps % size) + size) % size;  // to the right
      std::rotate(items.begin(), items.begin() + (size - shift), items.end());
    });
  }
  if (name_ == "copy") return arity(0, 0), std::make_shared<DequeValue>(storage->items, deque_->maxlen);
  if (name_ == "count" || name_ == "index" || name_ == "remove") {
    arity(1, name_ == "index" ? 3 : 1);
    long count = 0;
    for (size_t i = 0; i < storage->items.size(); ++i) {
      if (!member_equal(tracer, storage->items[i], args[0])) continue;
      if (name_ == "index") return ConstantValue::make(check(PyLong_FromSize_t(i)));
      if (name_ == "remove") return change([&](Args& items) { items.erase(items.begin() + static_cast<long>(i)); });
      ++count;
    }
    if (name_ == "count") return ConstantValue::make(check(PyLong_FromLong(count)));
    raise_error("python_error", PyExc_ValueError, name_ == "index" ? args[0]->repr() + " is not in deque" : "deque.remove(x): x not in deque");
  }
  unsupported("unsupported_call", "deque." + name_);
}

}  // namespace

PyObject* deque_type() {
  static PyObject* type = [] {
    py::Ref<> collections = check(PyImport_ImportModule("collections"));
    return check(PyObject_GetAttrString(collections.get(), "deque")).release();  // kept for the process
  }();
  return type;
}

DequeValue::DequeValue(Args items, ValuePtr maxlen)
    : storage(std::make_shared<SequenceValue>(true, std::move(items))), maxlen(std::move(maxlen)) {}

std::string DequeValue::repr() const { return "DequeVariable(" + storage->repr() + ")"; }

PyObject* DequeValue::python_type() const { return deque_type(); }

ValuePtr DequeValue::get_item(Tracer& tracer, const ValuePtr& key) {
  return storage->items[index_of(tracer, key, storage->items.size(), "deque index")];
}

void DequeValue::set_item(Tracer& tracer, const ValuePtr& key, const ValuePtr& value) {
  long index = index_of(tracer, key, storage->items.size(), "deque assignment");
  tracer.will_mutate(storage);
  storage->items[index] = value;
}

ValuePtr DequeValue::get_attr(Tracer&, const std::string& name) {
  if (name == "maxlen") return maxlen;
  static const char* methods[] = {"append", "appendleft", "extend", "extendleft", "pop",    "popleft", "insert",
                                  "clear",  "reverse",    "rotate", "copy",       "count", "index",   "remove"};
  for (const char* method : methods)
    if (name == method) return std::make_shared<DequeMethodValue>(std::static_pointer_cast<DequeValue>(shared_from_this()), name);
  unsupported("unsupported_attribute", repr() + "." + name);
}

ValuePtr call_deque(Tracer& tracer, PyObject* function, const Args& args, const KwArgs& kwargs) {
  if (function != deque_type()) return nullptr;
  ValuePtr iterable = args.empty() ? nullptr : args[0];
  ValuePtr maxlen = args.size() > 1 ? args[1] : ConstantValue::none();
  for (const auto& [name, value] : kwargs) {
    if (name == "iterable" && !iterable) iterable = value;
    else if (name == "maxlen") maxlen = value;
    else raise_error("bad_call", PyExc_TypeError, "deque() got an unexpected keyword argument '" + name + "'");
  }
  if (args.size() > 2) raise_error("bad_call", PyExc_TypeError, "deque() takes at most 2 arguments");
  if (!maxlen->is_constant() || (maxlen->constant() != Py_None && !PyLong_Check(maxlen->constant())))
    unsupported("unsupported_call", "deque(maxlen=" + maxlen->repr() + ")");
  if (maxlen->constant() != Py_None && PyLong_AsLong(maxlen->constant()) < 0)
    raise_error("python_error", PyExc_ValueError, "maxlen must be non-negative");
  Args items = iterable ? items_of_iterable(tracer, iterable) : Args{};
  long limit = maxlen_of(maxlen);
  if (limit >= 0 && static_cast<long>(items.size()) > limit) items.erase(items.begin(), items.end() - limit);
  return std::make_shared<DequeValue>(std::move(items), maxlen);
}

std::optional<codegen::OutputPlan> DequeValue::remake(PlanWriter& writer) {
  return writer.call(deque_type(), {std::make_shared<SequenceValue>(false, storage->items), maxlen});
}

}  // namespace bytegraph::trace
