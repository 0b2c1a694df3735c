// itertools over known items: see values/itertools.h.
//
// CPython's itertools runs for real, over tokens: each input item is replaced by its index in
// a pool, so the real function decides the structure (which items, in which order, grouped
// into which tuples) and the items themselves stay symbolic. Only functions whose output is
// made of their input items and tuples of them are run so (not accumulate). The endless ones
// (count, repeat without a count) and islice over an iterator are lazy iterator values
// instead, taking each item when asked, as CPython's do.
#include "trace/values/itertools.h"

#include <cstring>

#include "trace/operators.h"
#include "trace/plan_writer.h"
#include "trace/values/iterators.h"
#include "trace/values/exceptions.h"
#include "trace/values/dict_views.h"
#include "trace/values/sets.h"

namespace bytegraph::trace {

namespace {

constexpr Py_ssize_t kMaxItems = 10000;

// Which arguments of each function are iterables of items (the rest must be constants).
enum class Shape { AllIterables, FirstIterable, IterableOfIterables, Repeat, Compress };

struct Function {
  const char* name;
  Shape shape;
};

constexpr Function kFunctions[] = {
    {"chain", Shape::AllIterables},         {"product", Shape::AllIterables},
    {"zip_longest", Shape::AllIterables},   {"combinations", Shape::FirstIterable},
    {"combinations_with_replacement", Shape::FirstIterable},
    {"permutations", Shape::FirstIterable}, {"islice", Shape::FirstIterable},
    {"pairwise", Shape::FirstIterable},     {"from_iterable", Shape::IterableOfIterables},
    {"repeat", Shape::Repeat},              {"compress", Shape::Compress},
};

const Function* itertools_function(PyObject* callable) {
  static PyObject* module = check(PyImport_ImportModule("itertools")).release();
  py::Ref<> name_object = py::Ref<>::steal(PyObject_GetAttrString(callable, "__name__"));
  if (!name_object) {
    PyErr_Clear();
    return nullptr;
  }
  const char* name = PyUnicode_AsUTF8(name_object.get());
  if (name == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  for (const Function& function : kFunctions) {
    if (std::strcmp(function.name, name) != 0) continue;
    if (function.shape == Shape::IterableOfIterables) {
      // chain.from_iterable: a class method of itertools.chain.
      py::Ref<> chain = check(PyObject_GetAttrString(module, "chain"));
      if (!PyCFunction_Check(callable) || PyCFunction_GET_SELF(callable) != chain.get()) return nullptr;
      return &function;
    }
    py::Ref<> own = check(PyObject_GetAttrString(module, name));
    return own.get() == callable ? &function : nullptr;
  }
  return nullptr;
}

// The items of an iterable the trace knows without running code, or nothing.
std::optional<Args> known_items(Tracer& tracer, const ValuePtr& value) {
  const bool known = value->is_constant() || dynamic_cast<SequenceValue*>(value.get()) ||
                     dynamic_cast<DictValue*>(value.get()) || dynamic_cast<SetValue*>(value.get()) ||
                     dynamic_cast<DictViewValue*>(value.get());
  if (!known) return std::nullopt;
  return value->unpack(tracer);
}

bool reads_input_whole(const Function& function) {
  for (const char* name : {"product", "combinations", "combinations_with_replacement", "permutations"})
    if (std::strcmp(function.name, name) == 0) return true;
  return false;
}

class Tokens {
 public:
  // A tuple of tokens standing for `items`.
  py::Ref<> encode(const Args& items) {
    py::Ref<> tuple = check(PyTuple_New(static_cast<Py_ssize_t>(items.size())));
    for (size_t i = 0; i < items.size(); ++i) PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(i), token(items[i]).release());
    return tuple;
  }
  py::Ref<> token(const ValuePtr& item) {
    pool_.push_back(item);
    return check(PyLong_FromSize_t(pool_.size() - 1));
  }
  // What the real function yielded, with its tokens replaced by the items.
  ValuePtr decode(PyObject* produced) const {
    if (PyLong_CheckExact(produced)) {
      size_t index = PyLong_AsSize_t(produced);
      if (index >= pool_.size()) throw InternalError("itertools yielded an unknown token");
      return pool_[index];
    }
    if (!PyTuple_CheckExact(produced)) throw InternalError("itertools yielded something other than its items");
    Args items;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(produced); ++i) items.push_back(decode(PyTuple_GET_ITEM(produced, i)));
    return std::make_shared<SequenceValue>(false, std::move(items));
  }

 private:
  Args pool_;
};

PyObject* itertools_attr(const char* name) {
  static PyObject* module = check(PyImport_ImportModule("itertools")).release();  // kept for the process
  return check(PyObject_GetAttrString(module, name)).release();  // the module holds it too
}

// itertools.count(start, step) over constant numbers: endless, so made lazily, each item
// computed when asked for (a loop that breaks, zip with a finite iterable, next()).
class CountValue : public LazyIteratorValue {
 public:
  CountValue(py::Ref<> next, py::Ref<> step) : next_(std::move(next)), step_(std::move(step)) {}
  std::string repr() const override { return "CountVariable(" + py_repr(next_.get()) + ", " + py_repr(step_.get()) + ")"; }
  PyObject* python_type() const override { return type(); }
  ValuePtr next_item(Tracer& tracer) override {
    tracer.journal.save(shared_from_this());
    ValuePtr item = ConstantValue::make(next_.copy());
    next_ = check(PyNumber_Add(next_.get(), step_.get()));
    return item;
  }
  std::function<void()> saved_state() override {
    auto saved = std::make_shared<py::Ref<>>(next_.copy());  // std::function needs a copyable capture
    return [this, saved] { next_ = saved->copy(); };
  }
  // count(next, step): where it has got to.
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override {
    return writer.call(type(), {ConstantValue::make(next_.copy()), ConstantValue::make(step_.copy())});
  }

 private:
  static PyObject* type() {
    static PyObject* count = itertools_attr("count");
    return count;
  }
  py::Ref<> next_, step_;
};

// itertools.repeat(object) without a count: the same value, endlessly.
class RepeatValue : public LazyIteratorValue {
 public:
  explicit RepeatValue(ValuePtr object) : object_(std::move(object)) {}
  std::string repr() const override { return "RepeatVariable(" + object_->repr() + ")"; }
  PyObject* python_type() const override { return type(); }
  ValuePtr next_item(Tracer&) override { return object_; }
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override { return writer.call(type(), {object_}); }

 private:
  static PyObject* type() {
    static PyObject* repeat = itertools_attr("repeat");
    return repeat;
  }
  ValuePtr object_;
};

// itertools.islice over an iterator: lazy, as CPython's islice is, taking from the iterator
// only the items it reaches (what it skips and what it yields), when asked.
class IsliceValue : public LazyIteratorValue {
 public:
  // `stop` -1: none.
  IsliceValue(ValuePtr iterator, Py_ssize_t next, Py_ssize_t stop, Py_ssize_t step)
      : iterator_(std::move(iterator)), next_(next), stop_(stop), step_(step) {}
  std::string repr() const override { return "IsliceVariable(" + (iterator_ ? iterator_->repr() : std::string("exhausted")) + ")"; }
  PyObject* python_type() const override { return type(); }
  ValuePtr next_item(Tracer& tracer) override {
    if (!iterator_) return nullptr;
    tracer.journal.save(shared_from_this());
    while (count_ < next_) {
      if (!iterator_->next_item(tracer)) return exhausted();
      ++count_;
    }
    if (stop_ != -1 && count_ >= stop_) return exhausted();
    ValuePtr item = iterator_->next_item(tracer);
    if (!item) return exhausted();
    ++count_;
    const Py_ssize_t before = next_;
    next_ += step_;
    if (next_ < before || (stop_ != -1 && next_ > stop_)) next_ = stop_;
    return item;
  }
  std::function<void()> saved_state() override {
    auto iterator = iterator_;
    const Py_ssize_t count = count_, next = next_;
    return [this, iterator, count, next] {
      iterator_ = iterator;
      count_ = count;
      next_ = next;
    };
  }
  // islice(iterator, start, stop, step) counted from where both have got to.
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override {
    if (!iterator_) return writer.call(type(), {ConstantValue::make(check(PyTuple_New(0))), ConstantValue::make(check(PyLong_FromLong(0)))});
    ValuePtr stop = stop_ == -1 ? ConstantValue::none() : ConstantValue::make(check(PyLong_FromSsize_t(stop_ - count_)));
    return writer.call(type(), {iterator_, ConstantValue::make(check(PyLong_FromSsize_t(std::max<Py_ssize_t>(next_ - count_, 0)))),
                                stop, ConstantValue::make(check(PyLong_FromSsize_t(step_)))});
  }

 private:
  ValuePtr exhausted() {
    iterator_ = nullptr;
    return nullptr;
  }
  static PyObject* type() {
    static PyObject* islice = itertools_attr("islice");
    return islice;
  }
  ValuePtr iterator_;
  Py_ssize_t count_ = 0, next_, stop_, step_;
};

// islice(iterator, stop) / islice(iterator, start, stop[, step]) with CPython's checks.
ValuePtr lazy_islice(const Args& args, const KwArgs& kwargs) {
  if (!kwargs.empty()) raise_error("bad_call", PyExc_TypeError, "islice() takes no keyword arguments");
  if (args.size() < 2 || args.size() > 4) raise_error("bad_call", PyExc_TypeError, "islice expected 2 to 4 arguments");
  auto index = [](const ValuePtr& value, Py_ssize_t none, const char* error) -> Py_ssize_t {
    if (!value->is_constant()) unsupported("unsupported_call", "itertools.islice with " + value->repr() + ": indices must be constants");
    PyObject* real = value->constant();
    if (real == Py_None) return none;
    Py_ssize_t n = PyIndex_Check(real) ? PyNumber_AsSsize_t(real, PyExc_OverflowError) : -1;
    if (n == -1 && PyErr_Occurred()) PyErr_Clear();
    if (n < 0) raise_error("python_error", PyExc_ValueError, error);
    return n;
  };
  const char* indices = "Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize.";
  const char* stop_error = "Stop argument for islice() must be None or an integer: 0 <= x <= sys.maxsize.";
  Py_ssize_t start = 0, stop = -1, step = 1;
  if (args.size() == 2) {
    stop = index(args[1], -1, stop_error);
  } else {
    start = index(args[1], 0, indices);
    stop = index(args[2], -1, indices);
    if (args.size() == 4) {
      if (args[3]->is_constant() && args[3]->constant() != Py_None) {
        step = index(args[3], 1, "Step for islice() must be a positive integer or None.");
        if (step == 0) raise_error("python_error", PyExc_ValueError, "Step for islice() must be a positive integer or None.");
      }
    }
  }
  return std::make_shared<IsliceValue>(args[0], start, stop, step);
}

bool is_number(PyObject* object) { return PyNumber_Check(object) && !PyUnicode_Check(object); }

// count() and repeat(object) without a count, or null for the other calls.
ValuePtr endless_iterator(PyObject* callable, const Args& args, const KwArgs& kwargs) {
  static PyObject* count = itertools_attr("count");
  static PyObject* repeat = itertools_attr("repeat");
  if (callable == repeat) {
    if (args.size() == 1 && kwargs.empty()) return std::make_shared<RepeatValue>(args[0]);
    if (args.empty() && kwargs.size() == 1 && kwargs[0].first == "object") return std::make_shared<RepeatValue>(kwargs[0].second);
    return nullptr;
  }
  if (callable != count) return nullptr;
  ValuePtr start = args.size() > 0 ? args[0] : nullptr, step = args.size() > 1 ? args[1] : nullptr;
  if (args.size() > 2) raise_error("bad_call", PyExc_TypeError, "count expected at most 2 arguments, got " + std::to_string(args.size()));
  for (const auto& [name, value] : kwargs) {
    if (name == "start" && !start) start = value;
    else if (name == "step" && !step) step = value;
    else raise_error("bad_call", PyExc_TypeError, "count() got an unexpected keyword argument '" + name + "'");
  }
  py::Ref<> real_start = start ? (start->is_constant() ? py::Ref<>::newref(start->constant()) : py::Ref<>()) : check(PyLong_FromLong(0));
  py::Ref<> real_step = step ? (step->is_constant() ? py::Ref<>::newref(step->constant()) : py::Ref<>()) : check(PyLong_FromLong(1));
  if (!real_start || !real_step)
    unsupported("unsupported_call", "itertools.count over " + (real_start ? step : start)->repr() + ": only constant numbers");
  if (!is_number(real_start.get()) || !is_number(real_step.get()))
    raise_error("python_error", PyExc_TypeError, "a number is required");
  return std::make_shared<CountValue>(std::move(real_start), std::move(real_step));
}

}  // namespace

ValuePtr call_itertools(Tracer& tracer, PyObject* callable, const Args& args, const KwArgs& kwargs) {
  if (ValuePtr endless = endless_iterator(callable, args, kwargs)) return endless;
  static PyObject* islice = itertools_attr("islice");
  if (callable == islice && !args.empty() && args[0]->is_iterator()) return lazy_islice(args, kwargs);
  const Function* function = itertools_function(callable);
  if (function == nullptr) return nullptr;
  auto refuse = [&](const std::string& why) -> ValuePtr {
    unsupported("unsupported_call", std::string("itertools.") + function->name + " " + why);
  };
  Tokens tokens;
  py::Ref<> real_args = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i) {
    py::Ref<> real;
    const bool iterable = function->shape == Shape::AllIterables || function->shape == Shape::IterableOfIterables ||
                          ((function->shape == Shape::FirstIterable || function->shape == Shape::Compress) && i == 0);
    if (function->shape == Shape::Repeat && i == 0) {
      real = tokens.token(args[i]);
    } else if (iterable) {
      std::optional<Args> items = known_items(tracer, args[i]);
      // These read their whole input when made (tuple(iterable)): an iterator is consumed
      // now, generators and lazy iterators running their steps, as the real call does.
      if (!items && args[i]->is_iterator() && reads_input_whole(*function)) items = args[i]->unpack(tracer);
      if (!items) return refuse("over " + args[i]->repr() + " (its items are not known without running it)");
      if (function->shape == Shape::IterableOfIterables) {
        real = check(PyTuple_New(static_cast<Py_ssize_t>(items->size())));
        for (size_t k = 0; k < items->size(); ++k) {
          std::optional<Args> inner = known_items(tracer, (*items)[k]);
          if (!inner) return refuse("over " + (*items)[k]->repr());
          PyTuple_SET_ITEM(real.get(), static_cast<Py_ssize_t>(k), tokens.encode(*inner).release());
        }
      } else {
        real = tokens.encode(*items);
      }
    } else {
      real = constant_of(args[i]);
      if (!real) return refuse("with the argument " + args[i]->repr());
    }
    PyTuple_SET_ITEM(real_args.get(), static_cast<Py_ssize_t>(i), real.release());
  }
  py::Ref<> real_kwargs = check(PyDict_New());
  for (const auto& [name, value] : kwargs) {
    py::Ref<> real = name == "fillvalue" ? tokens.token(value) : constant_of(value);
    if (!real) return refuse("with the argument " + name + "=" + value->repr());
    check_status(PyDict_SetItemString(real_kwargs.get(), name.c_str(), real.get()));
  }
  if (function->shape == Shape::Repeat && (args.size() + kwargs.size()) < 2) return refuse("without a count (endless)");
  py::Ref<> iterator = py::Ref<>::steal(PyObject_Call(callable, real_args.get(), real_kwargs.get()));
  if (!iterator) {
    PythonError error = PythonError::fetch();
    raise_folded_error(error, std::string("itertools.") + function->name + " raised " + error.what());
  }
  Args produced;
  while (PyObject* raw = PyIter_Next(iterator.get())) {
    py::Ref<> item = py::Ref<>::steal(raw);
    if (static_cast<Py_ssize_t>(produced.size()) >= kMaxItems) return refuse("yields more than 10000 items");
    produced.push_back(tokens.decode(item.get()));
  }
  if (PyErr_Occurred()) throw_python_error();
  return std::make_shared<IteratorValue>(std::move(produced));
}

}  // namespace bytegraph::trace
