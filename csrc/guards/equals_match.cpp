// EQUALS_MATCH: the value is a Python constant equal to the one seen while tracing (and
// SET_MATCH: a set of such constants and identity members).
//
// Only immutable builtin constants are accepted (None, bool, int, float, complex, str, bytes,
// and tuples of these), so comparing them never runs user code. Equality here is stricter
// than `==` where a traced graph could tell the difference:
// - the type must match exactly, so 1, True and 1.0 are three different constants;
// - None and bools compare by identity (they are singletons);
// - NaN equals NaN (a NaN constant would otherwise never hit the cache);
// - 0.0 and -0.0 differ (1 / x, copysign and atan2 tell them apart).
#include <cmath>

#include "guards/leaf_guard.h"
#include "guards/python_text.h"
#include "python/errors.h"

namespace bytegraph::guards {

namespace {

bool is_singleton_constant(PyObject* value) {
  return value == Py_None || value == Py_True || value == Py_False || value == Py_Ellipsis;
}

bool is_supported_constant(PyObject* value) {
  if (is_singleton_constant(value)) return true;
  if (PyLong_CheckExact(value) || PyFloat_CheckExact(value) || PyComplex_CheckExact(value) ||
      PyUnicode_CheckExact(value) || PyBytes_CheckExact(value)) {
    return true;
  }
  if (!PyTuple_CheckExact(value)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); ++i) {
    if (!is_supported_constant(PyTuple_GET_ITEM(value, i))) return false;
  }
  return true;
}

bool same_double(double got, double expected) {
  if (std::isnan(expected)) return std::isnan(got);
  return got == expected && std::signbit(got) == std::signbit(expected);
}

bool constant_equal(PyObject* got, PyObject* expected);

bool tuple_equal(PyObject* got, PyObject* expected) {
  Py_ssize_t size = PyTuple_GET_SIZE(expected);
  if (PyTuple_GET_SIZE(got) != size) return false;
  for (Py_ssize_t i = 0; i < size; ++i) {
    if (!constant_equal(PyTuple_GET_ITEM(got, i), PyTuple_GET_ITEM(expected, i))) return false;
  }
  return true;
}

// `expected` is a supported constant; `got` is anything.
bool constant_equal(PyObject* got, PyObject* expected) {
  if (got == expected) return true;
  if (is_singleton_constant(expected)) return false;
  if (Py_TYPE(got) != Py_TYPE(expected)) return false;
  if (PyFloat_CheckExact(expected)) {
    return same_double(PyFloat_AS_DOUBLE(got), PyFloat_AS_DOUBLE(expected));
  }
  if (PyComplex_CheckExact(expected)) {
    Py_complex a = PyComplex_AsCComplex(got), b = PyComplex_AsCComplex(expected);
    return same_double(a.real, b.real) && same_double(a.imag, b.imag);
  }
  if (PyTuple_CheckExact(expected)) return tuple_equal(got, expected);
  // int, str, bytes of the exact builtin type: their comparison is C code that cannot fail.
  int equal = PyObject_RichCompareBool(got, expected, Py_EQ);
  if (equal < 0) throw_python_error();
  return equal == 1;
}

class EqualsMatch final : public LeafGuard {
 public:
  explicit EqualsMatch(py::Ref<> value) : value_(std::move(value)) {}
  bool check(PyObject* value) const override { return constant_equal(value, value_.get()); }
  std::string explain(PyObject* value, const std::string& source) const override {
    return source + " == " + short_repr(value_.get()) + ": got " + short_repr(value);
  }
  std::string describe(const std::string& source) const override {
    return source + ": EQUALS_MATCH " + short_repr(value_.get());
  }
  std::string dedupe_key() const override {
    // repr alone would merge 0.0 and -0.0 only if repr did; it does not, and it keeps
    // 1, True and 1.0 apart, so repr plus type name is an exact key for these constants.
    return "EQUALS_MATCH " + std::string(Py_TYPE(value_.get())->tp_name) + " " +
           safe_repr(value_.get());
  }
  int cost_rank() const override { return kCostValue; }
  void traverse(py::Visitor& visit) const override { visit(value_); }

 private:
  py::Ref<> value_;
};

// VALUE_MATCH: an immutable object of a class the tracer folds as a constant compared by value
// (torch's opaque value types: DTensor's placements, Shard(0) made anew each call). The class
// must be the traced one exactly, and its own == must hold.
class ValueMatch final : public LeafGuard {
 public:
  explicit ValueMatch(py::Ref<> value) : value_(std::move(value)) {}
  bool check(PyObject* value) const override {
    if (value == value_.get()) return true;
    if (Py_TYPE(value) != Py_TYPE(value_.get())) return false;
    int equal = PyObject_RichCompareBool(value, value_.get(), Py_EQ);
    if (equal < 0) throw_python_error();
    return equal == 1;
  }
  std::string explain(PyObject* value, const std::string& source) const override {
    return source + " == " + short_repr(value_.get()) + ": got " + short_repr(value);
  }
  std::string describe(const std::string& source) const override {
    return source + ": VALUE_MATCH " + short_repr(value_.get());
  }
  std::string dedupe_key() const override {
    return "VALUE_MATCH " + std::string(Py_TYPE(value_.get())->tp_name) + " " + safe_repr(value_.get());
  }
  int cost_rank() const override { return kCostValue; }
  bool may_run_python() const override { return true; }
  void traverse(py::Visitor& visit) const override { visit(value_); }

 private:
  py::Ref<> value_;
};

// SET_MATCH: a set (or frozenset) with the members seen while tracing, in the same iteration
// order (the trace may have iterated it). Members that are supported constants compare as
// EQUALS_MATCH compares them; any other member (a class, a function) by identity, which is
// how such objects hash and compare. Neither iterating a set nor these comparisons run
// Python code.
class SetMatch final : public LeafGuard {
 public:
  SetMatch(py::Ref<> type, py::Ref<> members) : type_(std::move(type)), members_(std::move(members)) {}
  bool check(PyObject* value) const override {
    if ((PyObject*)Py_TYPE(value) != type_.get()) return false;
    Py_ssize_t count = PyTuple_GET_SIZE(members_.get());
    if (PySet_GET_SIZE(value) != count) return false;
    // set's own iterator: a subclass's __iter__ is Python code and not where members live.
    py::Ref<> iterator = bytegraph::check(PySet_Type.tp_iter(value));
    for (Py_ssize_t i = 0; i < count; ++i) {
      py::Ref<> got = py::Ref<>::steal(PyIter_Next(iterator.get()));
      if (!got) {
        if (PyErr_Occurred()) throw_python_error();
        return false;
      }
      PyObject* expected = PyTuple_GET_ITEM(members_.get(), i);
      bool same = is_supported_constant(expected) ? constant_equal(got.get(), expected) : got.get() == expected;
      if (!same) return false;
    }
    return true;
  }
  std::string explain(PyObject* value, const std::string& source) const override {
    if ((PyObject*)Py_TYPE(value) != type_.get()) return source + ": expected a " + name() + ", got a " + Py_TYPE(value)->tp_name;
    py::Ref<> iterator = bytegraph::check(PySet_Type.tp_iter(value));
    py::Ref<> got = bytegraph::check(PySequence_Tuple(iterator.get()));
    return source + " members == " + short_repr(members_.get()) + ": got " + short_repr(got.get());
  }
  std::string describe(const std::string& source) const override {
    return source + ": SET_MATCH " + name() + short_repr(members_.get());
  }
  std::string dedupe_key() const override { return "SET_MATCH " + name() + safe_repr(members_.get()); }
  int cost_rank() const override { return kCostDictKeys; }
  void traverse(py::Visitor& visit) const override {
    visit(type_);
    visit(members_);
  }

 private:
  std::string name() const { return reinterpret_cast<PyTypeObject*>(type_.get())->tp_name; }
  py::Ref<> type_;     // set, frozenset or a subclass: exactly this type
  py::Ref<> members_;  // a tuple, in the set's iteration order
};

}  // namespace

LeafPtr make_set_match(PyObject* type, PyObject* members) {
  if (members == nullptr || !PyTuple_Check(members)) throw PythonError::make(PyExc_TypeError, "SET_MATCH: members must be a tuple");
  if (type == nullptr || !PyType_Check(type) ||
      !(PyType_IsSubtype((PyTypeObject*)type, &PySet_Type) || PyType_IsSubtype((PyTypeObject*)type, &PyFrozenSet_Type)))
    throw PythonError::make(PyExc_TypeError, "SET_MATCH: the type must be a set or frozenset type");
  return std::make_shared<SetMatch>(py::Ref<>::newref(type), py::Ref<>::newref(members));
}

LeafPtr make_equals_match(PyObject* value) {
  if (value == nullptr || !is_supported_constant(value)) {
    std::string got = value == nullptr ? "NULL" : type_name(Py_TYPE(value));
    throw PythonError::make(PyExc_TypeError,
                            "EQUALS_MATCH supports None, bool, int, float, complex, str, bytes "
                            "and tuples of these; got " + got);
  }
  return std::make_shared<EqualsMatch>(py::Ref<>::newref(value));
}

LeafPtr make_value_match(PyObject* value) {
  if (value == nullptr) throw PythonError::make(PyExc_TypeError, "VALUE_MATCH needs a value");
  return std::make_shared<ValueMatch>(py::Ref<>::newref(value));
}

}  // namespace bytegraph::guards
