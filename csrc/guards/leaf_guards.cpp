// The simple leaf checks: TYPE_MATCH, ID_MATCH, NONE_MATCH / NOT_NONE_MATCH, LENGTH_MATCH
// and DICT_KEYS_MATCH. Equality and tensor checks have their own files.
#include <cstdio>

#include "guards/leaf_guard.h"
#include "guards/python_text.h"
#include "python/errors.h"

namespace bytegraph::guards {

namespace {

std::string pointer_text(const void* ptr) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%p", ptr);
  return buffer;
}

class TypeMatch final : public LeafGuard {
 public:
  explicit TypeMatch(PyTypeObject* type)
      : type_(py::Ref<PyTypeObject>::newref(type)) {}
  // Exact identity: a subclass (bool for int, Parameter for Tensor) is a different type.
  bool check(PyObject* value) const override { return Py_TYPE(value) == type_.get(); }
  std::string explain(PyObject* value, const std::string& source) const override {
    return source + " type: expected " + type_name(type_.get()) + ", got " +
           type_name(Py_TYPE(value));
  }
  std::string describe(const std::string& source) const override {
    return source + ": TYPE_MATCH " + type_name(type_.get());
  }
  std::string dedupe_key() const override { return "TYPE_MATCH " + pointer_text(type_.get()); }
  int cost_rank() const override { return kCostIdentity; }
  void traverse(py::Visitor& visit) const override { visit(type_); }

 private:
  py::Ref<PyTypeObject> type_;
};

class IdMatch final : public LeafGuard {
 public:
  // Holds a strong reference: while the guard lives, no other object can reuse the address
  // and pass the check by accident.
  explicit IdMatch(PyObject* object) : object_(py::Ref<>::newref(object)) {}
  bool check(PyObject* value) const override { return value == object_.get(); }
  std::string explain(PyObject*, const std::string& source) const override {
    return source + " identity changed";
  }
  std::string describe(const std::string& source) const override {
    return source + ": ID_MATCH " + short_repr(object_.get());
  }
  std::string dedupe_key() const override { return "ID_MATCH " + pointer_text(object_.get()); }
  int cost_rank() const override { return kCostIdentity; }
  void traverse(py::Visitor& visit) const override { visit(object_); }

 private:
  py::Ref<> object_;
};

class NoneMatch final : public LeafGuard {
 public:
  explicit NoneMatch(bool is_none) : is_none_(is_none) {}
  bool check(PyObject* value) const override { return (value == Py_None) == is_none_; }
  std::string explain(PyObject* value, const std::string& source) const override {
    return source + (is_none_ ? " is None: got " : " is not None: got ") + short_repr(value);
  }
  std::string describe(const std::string& source) const override {
    return source + (is_none_ ? ": NONE_MATCH" : ": NOT_NONE_MATCH");
  }
  std::string dedupe_key() const override { return is_none_ ? "NONE_MATCH" : "NOT_NONE_MATCH"; }
  int cost_rank() const override { return kCostIdentity; }

 private:
  bool is_none_;
};

// The length of a list, tuple or dict (subclasses included: their storage is the base's),
// or -1 for anything else, whose __len__ could run arbitrary code.
Py_ssize_t builtin_container_length(PyObject* value) {
  if (PyList_Check(value)) return PyList_GET_SIZE(value);
  if (PyTuple_Check(value)) return PyTuple_GET_SIZE(value);
  if (PyDict_Check(value)) return PyDict_GET_SIZE(value);
  return -1;
}

class LengthMatch final : public LeafGuard {
 public:
  explicit LengthMatch(Py_ssize_t length) : length_(length) {}
  bool check(PyObject* value) const override {
    return builtin_container_length(value) == length_;
  }
  std::string explain(PyObject* value, const std::string& source) const override {
    std::string head = "len(" + source + ") == " + std::to_string(length_) + ": got ";
    Py_ssize_t got = builtin_container_length(value);
    if (got < 0) return head + "a " + type_name(Py_TYPE(value)) + ", not a list, tuple or dict";
    return head + std::to_string(got);
  }
  std::string describe(const std::string& source) const override {
    return source + ": LENGTH_MATCH " + std::to_string(length_);
  }
  std::string dedupe_key() const override { return "LENGTH_MATCH " + std::to_string(length_); }
  int cost_rank() const override { return kCostLength; }

 private:
  Py_ssize_t length_;
};

// len(value) through its own __len__ (a deque, a C container the trace folded the length of).
class SizeMatch final : public LeafGuard {
 public:
  explicit SizeMatch(Py_ssize_t length) : length_(length) {}
  bool check(PyObject* value) const override { return size_of(value) == length_; }
  std::string explain(PyObject* value, const std::string& source) const override {
    Py_ssize_t got = size_of(value);
    return "len(" + source + ") == " + std::to_string(length_) + ": got " + (got < 0 ? "no length" : std::to_string(got));
  }
  std::string describe(const std::string& source) const override {
    return source + ": SIZE_MATCH " + std::to_string(length_);
  }
  std::string dedupe_key() const override { return "SIZE_MATCH " + std::to_string(length_); }
  int cost_rank() const override { return kCostDictKeys; }
  bool may_run_python() const override { return true; }

 private:
  static Py_ssize_t size_of(PyObject* value) {
    Py_ssize_t size = PyObject_Size(value);
    if (size < 0) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw_python_error();
      PyErr_Clear();
    }
    return size;
  }
  Py_ssize_t length_;
};

// Keys of these kinds are looked up by value; any other key object (a tensor, whose == is
// elementwise; a class; an instance) is the key the trace read only if it is that object.
bool keyed_by_value(PyObject* key) {
  return key == Py_None || PyUnicode_Check(key) || PyLong_Check(key) || PyFloat_Check(key) || PyComplex_Check(key) ||
         PyBytes_Check(key) || PyTuple_Check(key) || PyFrozenSet_Check(key);
}

// Same type and equal. Keys are almost always interned strings, so identity usually decides.
bool same_key(PyObject* got, PyObject* expected) {
  if (got == expected) return true;
  if (Py_TYPE(got) != Py_TYPE(expected) || !keyed_by_value(got)) return false;
  int equal = PyObject_RichCompareBool(got, expected, Py_EQ);
  if (equal < 0) throw_python_error();
  return equal == 1;
}

class DictKeysMatch final : public LeafGuard {
 public:
  explicit DictKeysMatch(py::Ref<> keys) : keys_(std::move(keys)) {}

  bool check(PyObject* value) const override {
    if (PyDict_CheckExact(value)) return exact_dict_matches(value);
    if (!PyDict_Check(value)) return false;
    // A dict subclass (OrderedDict) may keep its own order: ask it, on the slow path.
    py::Ref<> keys = current_keys(value);
    return keys_equal(keys.get());
  }
  std::string explain(PyObject* value, const std::string& source) const override {
    if (!PyDict_Check(value)) {
      return source + " keys: expected a dict, got " + type_name(Py_TYPE(value));
    }
    py::Ref<> keys = current_keys(value);
    return source + " keys: expected " + short_repr(keys_.get()) + ", got " +
           short_repr(keys.get());
  }
  std::string describe(const std::string& source) const override {
    return source + ": DICT_KEYS_MATCH " + short_repr(keys_.get());
  }
  std::string dedupe_key() const override { return "DICT_KEYS_MATCH " + safe_repr(keys_.get()); }
  int cost_rank() const override { return kCostDictKeys; }
  bool may_run_python() const override { return true; }
  void traverse(py::Visitor& visit) const override { visit(keys_); }

 private:
  bool exact_dict_matches(PyObject* dict) const {
    Py_ssize_t count = PyTuple_GET_SIZE(keys_.get());
    if (PyDict_GET_SIZE(dict) != count) return false;
    Py_ssize_t position = 0, index = 0;
    PyObject *key, *item;  // borrowed
    while (PyDict_Next(dict, &position, &key, &item)) {
      if (!same_key(key, PyTuple_GET_ITEM(keys_.get(), index++))) return false;
    }
    return true;
  }
  bool keys_equal(PyObject* keys) const {
    Py_ssize_t count = PyTuple_GET_SIZE(keys_.get());
    if (PyTuple_GET_SIZE(keys) != count) return false;
    for (Py_ssize_t i = 0; i < count; ++i) {
      if (!same_key(PyTuple_GET_ITEM(keys, i), PyTuple_GET_ITEM(keys_.get(), i))) return false;
    }
    return true;
  }
  static py::Ref<> current_keys(PyObject* dict) {
    py::Ref<> keys = bytegraph::check(PyMapping_Keys(dict));
    return bytegraph::check(PySequence_Tuple(keys.get()));
  }

  py::Ref<> keys_;  // a tuple
};

}  // namespace

LeafPtr make_type_match(PyTypeObject* type) {
  BYTEGRAPH_CHECK(type != nullptr, "TYPE_MATCH needs a type");
  return std::make_shared<TypeMatch>(type);
}

LeafPtr make_id_match(PyObject* object) {
  BYTEGRAPH_CHECK(object != nullptr, "ID_MATCH needs an object");
  return std::make_shared<IdMatch>(object);
}

LeafPtr make_none_match(bool is_none) { return std::make_shared<NoneMatch>(is_none); }

namespace {

class DictLacksKey final : public LeafGuard {
 public:
  explicit DictLacksKey(PyObject* key) : key_(py::Ref<>::newref(key)) {}
  bool check(PyObject* value) const override {
    if (!PyDict_CheckExact(value)) return false;
    PyObject* found = PyDict_GetItemWithError(value, key_.get());  // borrowed
    if (found == nullptr && PyErr_Occurred()) throw_python_error();
    return found == nullptr;
  }
  std::string explain(PyObject*, const std::string& source) const override {
    return source + " has " + short_repr(key_.get()) + ": expected it absent";
  }
  std::string describe(const std::string& source) const override {
    return source + ": DICT_LACKS_KEY " + short_repr(key_.get());
  }
  std::string dedupe_key() const override { return "DICT_LACKS_KEY " + short_repr(key_.get()); }
  int cost_rank() const override { return kCostValue; }
  void traverse(py::Visitor& visit) const override { visit(key_); }

 private:
  py::Ref<> key_;
};

// The object has no attribute `name` (hasattr() answered False): what its class, its
// instance dict or a __getattr__ says at check time.
class LacksAttr final : public LeafGuard {
 public:
  explicit LacksAttr(PyObject* name) : name_(py::Ref<>::newref(name)) {}
  bool check(PyObject* value) const override {
    if (py::Ref<> found = py::Ref<>::steal(PyObject_GetAttr(value, name_.get()))) return false;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw_python_error();
    PyErr_Clear();
    return true;
  }
  std::string explain(PyObject*, const std::string& source) const override {
    return source + " has attribute " + short_repr(name_.get()) + ": expected it absent";
  }
  std::string describe(const std::string& source) const override {
    return source + ": LACKS_ATTR " + short_repr(name_.get());
  }
  std::string dedupe_key() const override { return "LACKS_ATTR " + short_repr(name_.get()); }
  int cost_rank() const override { return kCostDictKeys; }
  bool may_run_python() const override { return true; }
  void traverse(py::Visitor& visit) const override { visit(name_); }

 private:
  py::Ref<> name_;
};

}  // namespace

LeafPtr make_dict_lacks_key(PyObject* key) { return std::make_shared<DictLacksKey>(key); }
LeafPtr make_size_match(Py_ssize_t length) { return std::make_shared<SizeMatch>(length); }
LeafPtr make_lacks_attr(PyObject* name) { return std::make_shared<LacksAttr>(name); }

LeafPtr make_length_match(Py_ssize_t length) {
  if (length < 0) throw PythonError::make(PyExc_ValueError, "LENGTH_MATCH: negative length");
  return std::make_shared<LengthMatch>(length);
}

LeafPtr make_dict_keys_match(PyObject* keys) {
  if (keys == nullptr || !PyTuple_Check(keys)) {
    throw PythonError::make(PyExc_TypeError, "DICT_KEYS_MATCH: keys must be a tuple");
  }
  // Hash every key now: an unhashable key would only fail later, at check time.
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); ++i) {
    if (PyObject_Hash(PyTuple_GET_ITEM(keys, i)) == -1) throw_python_error();
  }
  return std::make_shared<DictKeysMatch>(py::Ref<>::newref(keys));
}

}  // namespace bytegraph::guards
