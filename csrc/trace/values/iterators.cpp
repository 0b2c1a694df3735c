// Lazy iterators: see values/iterators.h.
#include "trace/values/iterators.h"

#include "python/import.h"
#include "trace/plan_writer.h"
#include "trace/values/generators.h"

namespace bytegraph::trace {

namespace {

class MapValue : public LazyIteratorValue {
 public:
  MapValue(ValuePtr function, Args iterators) : function_(std::move(function)), iterators_(std::move(iterators)) {}
  std::string repr() const override { return "MapVariable(" + function_->repr() + ")"; }
  PyObject* python_type() const override { return builtin_object("map"); }
  ValuePtr next_item(Tracer& tracer) override {
    Args args;
    for (const auto& iterator : iterators_) {
      ValuePtr item = iterator->next_item(tracer);
      if (!item) return nullptr;
      args.push_back(std::move(item));
    }
    return function_->call(tracer, args, {});
  }
  // map(function, *iterators) over what is left: the calls run when the caller iterates, as
  // they would have.
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override {
    Args arguments{function_};
    arguments.insert(arguments.end(), iterators_.begin(), iterators_.end());
    return writer.call(builtin_object("map"), arguments);
  }

 private:
  ValuePtr function_;
  Args iterators_;
};

class FilterValue : public LazyIteratorValue {
 public:
  FilterValue(ValuePtr function, ValuePtr iterator) : function_(std::move(function)), iterator_(std::move(iterator)) {}
  std::string repr() const override { return "FilterVariable(" + (function_ ? function_->repr() : "None") + ")"; }
  PyObject* python_type() const override { return builtin_object("filter"); }
  ValuePtr next_item(Tracer& tracer) override {
    while (ValuePtr item = iterator_->next_item(tracer)) {
      ValuePtr keep = function_ ? function_->call(tracer, {item}, {}) : item;
      if (keep->truthy(tracer)) return item;
    }
    return nullptr;
  }
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override {
    return writer.call(builtin_object("filter"), {function_ ? function_ : ConstantValue::none(), iterator_});
  }

 private:
  ValuePtr function_;  // null: filter(None, ...) keeps the truthy items
  ValuePtr iterator_;
};

class ZipValue : public LazyIteratorValue {
 public:
  explicit ZipValue(Args iterators) : iterators_(std::move(iterators)) {}
  std::string repr() const override { return "ZipVariable(" + std::to_string(iterators_.size()) + ")"; }
  PyObject* python_type() const override { return builtin_object("zip"); }
  ValuePtr next_item(Tracer& tracer) override {
    if (iterators_.empty()) return nullptr;
    Args row;
    for (const auto& iterator : iterators_) {
      ValuePtr item = iterator->next_item(tracer);
      if (!item) return nullptr;  // as zip does, the items already taken from the others are lost
      row.push_back(std::move(item));
    }
    return std::make_shared<SequenceValue>(false, std::move(row));
  }
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override { return writer.call(builtin_object("zip"), iterators_); }

 private:
  Args iterators_;
};

class EnumerateValue : public LazyIteratorValue {
 public:
  EnumerateValue(ValuePtr iterator, long start) : iterator_(std::move(iterator)), index_(start) {}
  std::string repr() const override { return "EnumerateVariable(" + iterator_->repr() + ")"; }
  PyObject* python_type() const override { return builtin_object("enumerate"); }
  ValuePtr next_item(Tracer& tracer) override {
    tracer.journal.save(shared_from_this());
    ValuePtr item = iterator_->next_item(tracer);
    if (!item) return nullptr;
    ValuePtr index = ConstantValue::make(check(PyLong_FromLong(index_++)));
    return std::make_shared<SequenceValue>(false, Args{index, item});
  }
  std::function<void()> saved_state() override {
    long index = index_;
    return [this, index] { index_ = index; };
  }
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override {
    return writer.call(builtin_object("enumerate"), {iterator_, ConstantValue::make(check(PyLong_FromLong(index_)))});
  }

 private:
  ValuePtr iterator_;
  long index_;
};

}  // namespace

std::optional<Args> LazyIteratorValue::unpack(Tracer& tracer) { return drain(tracer, *this); }

ValuePtr iterate(Tracer& tracer, const ValuePtr& iterable, const char* what) {
  if (iterable->is_iterator()) return iterable;
  ValuePtr iterator = iterator_over(tracer, iterable);
  if (!iterator) unsupported("unsupported_iteration", std::string(what) + " over " + iterable->repr());
  return iterator;
}

bool any_lazy(const Args& values) {
  for (const auto& value : values)
    if (value->is_iterator() && !dynamic_cast<IteratorValue*>(value.get())) return true;
  return false;
}

ValuePtr make_map(Tracer& tracer, ValuePtr function, const Args& iterables) {
  Args iterators;
  for (const auto& iterable : iterables) iterators.push_back(iterate(tracer, iterable, "map"));
  return std::make_shared<MapValue>(std::move(function), std::move(iterators));
}

ValuePtr make_filter(Tracer& tracer, ValuePtr function, const ValuePtr& iterable) {
  if (function->is_constant() && function->constant() == Py_None) function = nullptr;
  return std::make_shared<FilterValue>(std::move(function), iterate(tracer, iterable, "filter"));
}

ValuePtr make_lazy_zip(Tracer& tracer, const Args& iterables) {
  Args iterators;
  for (const auto& iterable : iterables) iterators.push_back(iterate(tracer, iterable, "zip"));
  return std::make_shared<ZipValue>(std::move(iterators));
}

ValuePtr make_lazy_enumerate(Tracer& tracer, const ValuePtr& iterable, long start) {
  return std::make_shared<EnumerateValue>(iterate(tracer, iterable, "enumerate"), start);
}

}  // namespace bytegraph::trace
