// itertools over known items: see values/itertools.h.
//
// CPython's itertools runs for real, over tokens: each input item is replaced by its index in
// a pool, so the real function decides the structure (which items, in which order, grouped
// into which tuples) and the items themselves stay symbolic. Only functions whose output is
// made of their input items and tuples of them are run so (not accumulate, not count).
#include "trace/values/itertools.h"

#include <cstring>

#include "trace/operators.h"
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

}  // namespace

ValuePtr call_itertools(Tracer& tracer, PyObject* callable, const Args& args, const KwArgs& kwargs) {
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
