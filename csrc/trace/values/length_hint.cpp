// operator.length_hint: see values/length_hint.h. The steps and texts are CPython's
// PyObject_LengthHint and slot_sq_length (3.11–3.13 agree on them).
#include "trace/values/length_hint.h"

#include <optional>

#include "python/import.h"
#include "trace/operators.h"
#include "trace/symbolic.h"
#include "trace/values/exceptions.h"
#include "trace/values/number_protocol.h"

namespace bytegraph::trace {

namespace {

const char* const kConcrete = "operator.length_hint() is run at trace time on concrete numbers";

ValuePtr size_value(Py_ssize_t size) { return ConstantValue::make(check(PyLong_FromSsize_t(size))); }

// The default's conversion in operator.length_hint's argument parsing: _PyNumber_Index, then
// PyLong_AsSsize_t.
Py_ssize_t ssize_of(Tracer& tracer, const ValuePtr& value) {
  ValuePtr index = index_of(tracer, value);
  Py_ssize_t size = PyLong_AsSsize_t(index->constant());
  if (size == -1 && PyErr_Occurred()) raise_current_error("operator.length_hint's default");
  return size;
}

// slot_sq_length: __len__'s result through _PyNumber_Index, then at least 0 and fitting a
// Py_ssize_t.
Py_ssize_t checked_length(Tracer& tracer, const ValuePtr& result) {
  ValuePtr index = index_of(tracer, result);
  py::Ref<> zero = check(PyLong_FromLong(0));
  int negative = PyObject_RichCompareBool(index->constant(), zero.get(), Py_LT);
  check_status(negative);
  if (negative) raise_error("value_error", PyExc_ValueError, "__len__() should return >= 0");
  Py_ssize_t length = PyNumber_AsSsize_t(index->constant(), PyExc_OverflowError);
  if (length == -1 && PyErr_Occurred()) raise_current_error("__len__");
  return length;
}

// len(obj) where its class has __len__; none where it has not, or where it raised TypeError
// (which length_hint swallows, as it does a TypeError from converting the result).
std::optional<Py_ssize_t> length_of(Tracer& tracer, const ValuePtr& obj) {
  PyObject* method = special_method(tracer, obj, "__len__");
  if (method == nullptr) return std::nullopt;
  try {
    // A tensor's Python __len__ is torch's: len() of a tensor reads its fake's size.
    if (PyFunction_Check(method) && !obj->is_tensor())
      return checked_length(tracer, inline_special_method(tracer, obj, "__len__", method));
    // A builtin type's (a container made in the trace, a dict subclass's items).
    BuiltinValue len(py::Ref<>::newref(builtin_object("len")));
    ValuePtr length = specialize(tracer, len.call(tracer, {obj}, {}), kConcrete);
    return PyLong_AsSsize_t(length->constant());
  } catch (const Raised& raised) {
    if (raised.is_a(PyExc_TypeError)) return std::nullopt;
    throw;
  }
}

// A builtin container's iterator's hint is what is left of it (listiter_len, setiter_len, ...);
// the tracer's other iterators (zip's, enumerate's) have no known type and no hint here.
std::optional<Py_ssize_t> iterator_hint(const IteratorValue& iterator) {
  PyObject* type = iterator.python_type();
  if (type == nullptr || iterator.enumerate_start())
    unsupported("unsupported_builtin", "operator.length_hint of " + iterator.repr());
  py::Ref<> key = check(PyUnicode_InternFromString("__length_hint__"));
  if (_PyType_Lookup(reinterpret_cast<PyTypeObject*>(type), key.get()) == nullptr) return std::nullopt;
  const size_t size = iterator.size();
  return size > iterator.position() ? static_cast<Py_ssize_t>(size - iterator.position()) : 0;
}

// __length_hint__, its result checked; none where the default is the answer (no such method,
// a TypeError from it, NotImplemented).
std::optional<Py_ssize_t> hint_of(Tracer& tracer, const ValuePtr& obj) {
  if (auto* iterator = dynamic_cast<IteratorValue*>(obj.get())) return iterator_hint(*iterator);
  PyObject* method = special_method(tracer, obj, "__length_hint__");
  if (method == nullptr) return std::nullopt;
  ValuePtr result;
  try {
    result = specialize(tracer, inline_special_method(tracer, obj, "__length_hint__", method), kConcrete);
  } catch (const Raised& raised) {
    if (raised.is_a(PyExc_TypeError)) return std::nullopt;
    throw;
  }
  PyObject* known = result->is_constant() ? result->constant() : result->real_object();
  if (known == Py_NotImplemented) return std::nullopt;
  auto* type = reinterpret_cast<PyTypeObject*>(result->python_type());
  if (type == nullptr) unsupported("unsupported_builtin", "__length_hint__ returned " + result->repr());
  if (!PyType_IsSubtype(type, &PyLong_Type))
    raise_error("python_error", PyExc_TypeError,
                "__length_hint__ must be an integer, not " + std::string(type->tp_name).substr(0, 100));
  if (!result->is_constant()) unsupported("unsupported_builtin", "__length_hint__ returned " + result->repr());
  Py_ssize_t hint = PyLong_AsSsize_t(result->constant());
  if (hint == -1 && PyErr_Occurred()) raise_current_error("__length_hint__");
  if (hint < 0) raise_error("value_error", PyExc_ValueError, "__length_hint__() should return >= 0");
  return hint;
}

}  // namespace

ValuePtr call_length_hint(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  PyObject* function = operator_function("length_hint");
  if (args.empty() || args.size() > 2 || !kwargs.empty()) raise_bad_arguments(function, args, kwargs);
  // The default is converted first (an error there comes before any of obj's methods run).
  const Py_ssize_t fallback = args.size() == 2 ? ssize_of(tracer, args[1]) : 0;
  const ValuePtr& obj = args[0];
  // A constant of a builtin type runs no Python code.
  if (obj->is_constant() && !PyType_HasFeature(Py_TYPE(obj->constant()), Py_TPFLAGS_HEAPTYPE))
    return fold(function, {obj, size_value(fallback)});
  if (!dynamic_cast<IteratorValue*>(obj.get())) {
    if (std::optional<Py_ssize_t> length = length_of(tracer, obj)) return size_value(*length);
  }
  if (std::optional<Py_ssize_t> hint = hint_of(tracer, obj)) return size_value(*hint);
  return size_value(fallback);
}

}  // namespace bytegraph::trace
