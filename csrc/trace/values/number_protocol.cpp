// Number-protocol builtins: see values/number_protocol.h. Each step follows the CPython C
// function named beside it (3.11–3.13 agree on them), error texts included.
#include "trace/values/number_protocol.h"

#include <cstring>
#include <string>

#include "python/import.h"
#include "trace/operators.h"
#include "trace/symbolic.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

const char* const kConcrete = "math.ceil/floor/trunc, operator.index, bin, oct and hex run at trace time on concrete numbers";

// math.<name>, looked up once (kept for the process).
PyObject* math_function(const char* name) {
  static PyObject* module = import_module("math").release();
  return check(PyObject_GetAttrString(module, name)).release();
}

PyTypeObject* type_of(const ValuePtr& value) {
  PyObject* type = value->python_type();
  if (type == nullptr) unsupported("unsupported_builtin", "the class of " + value->repr() + " is not known");
  return reinterpret_cast<PyTypeObject*>(type);
}

// A class's name as CPython's messages print it (`%.50s` keeps at most 50 bytes).
std::string name_of(PyTypeObject* type, size_t limit) { return std::string(type->tp_name).substr(0, limit); }

[[noreturn]] void type_error(const std::string& text) { raise_error("python_error", PyExc_TypeError, text); }

// CPython accepts, with a DeprecationWarning, a conversion method that returns an instance of
// a strict subclass of the type it should return. Warned while tracing (once per compile);
// where warnings are errors the exception is the program's.
void warn_deprecated(const std::string& text) {
  if (PyErr_WarnEx(PyExc_DeprecationWarning, text.c_str(), 1) < 0) raise_current_error("a DeprecationWarning");
}

bool user_class(PyTypeObject* type) { return PyType_HasFeature(type, Py_TPFLAGS_HEAPTYPE); }

// Instances of user classes (made in the trace or read from outside, int and float subclasses
// among the constants) go through the protocol here; a constant of a builtin type runs no
// Python code, so the real function is folded on it.
bool follows_protocol(const ValuePtr& value) {
  if (value->is_constant()) return user_class(Py_TYPE(value->constant()));
  return dynamic_cast<ObjectValue*>(value.get()) != nullptr;
}

// The number an int or float subclass instance is: what a builtin base's own method (int.__ceil__,
// float.__floor__) and CPython's direct reads (PyFloat_AS_DOUBLE, _PyLong_Copy) see.
py::Ref<> builtin_number(Tracer& tracer, const ValuePtr& value) {
  PyObject* real = value->is_constant() ? value->constant() : value->real_object();
  if (real == nullptr || !(PyLong_Check(real) || PyFloat_Check(real)))
    unsupported("unsupported_builtin", "the number " + value->repr() + " holds is not known at trace time");
  if (!value->is_constant()) tracer.pin_identity(value);  // immutable, so its identity pins its value
  if (PyLong_Check(real)) return check(PyNumber_Index(real));  // an exact int; no __index__ runs for an int
  return check(PyFloat_FromDouble(PyFloat_AS_DOUBLE(real)));
}

ValuePtr constant(py::Ref<> object) { return ConstantValue::make(std::move(object)); }

// PyFloat_AsDouble: a float subclass by its value, else __float__ (whose result must be a
// float), else __index__, else TypeError.
double as_double(Tracer& tracer, const ValuePtr& value) {
  ValuePtr number = specialize(tracer, value, kConcrete);
  if (number->is_tensor()) unsupported("unsupported_builtin", "a tensor converted to float at trace time");
  if (!follows_protocol(number) && number->is_constant()) {
    double x = PyFloat_AsDouble(number->constant());
    if (x == -1.0 && PyErr_Occurred()) raise_current_error("float conversion");
    return x;
  }
  PyTypeObject* type = type_of(number);
  if (PyType_IsSubtype(type, &PyFloat_Type)) return PyFloat_AS_DOUBLE(builtin_number(tracer, number).get());
  if (PyObject* method = special_method(tracer, number, "__float__")) {
    if (!PyFunction_Check(method)) {  // a builtin base's (int.__float__)
      double x = PyFloat_AsDouble(builtin_number(tracer, number).get());
      if (x == -1.0 && PyErr_Occurred()) raise_current_error("float conversion");
      return x;
    }
    ValuePtr result = specialize(tracer, inline_special_method(tracer, number, "__float__", method), kConcrete);
    PyTypeObject* result_type = type_of(result);
    if (!PyType_IsSubtype(result_type, &PyFloat_Type))
      type_error(name_of(type, 50) + ".__float__ returned non-float (type " + name_of(result_type, 50) + ")");
    if (result_type != &PyFloat_Type)
      warn_deprecated(name_of(type, 50) + ".__float__ returned non-float (type " + name_of(result_type, 50) +
                      ").  The ability to return an instance of a strict subclass of float is deprecated, and may be "
                      "removed in a future version of Python.");
    return PyFloat_AS_DOUBLE(builtin_number(tracer, result).get());
  }
  if (special_method(tracer, number, "__index__")) {
    ValuePtr index = index_of(tracer, number);
    double x = PyLong_AsDouble(index->constant());
    if (x == -1.0 && PyErr_Occurred()) raise_current_error("float conversion");
    return x;
  }
  type_error("must be real number, not " + name_of(type, 50));
}

// math.ceil / math.floor (math_ceil, math_floor): an exact float directly, else the class's
// special method, else the float the value converts to. math.trunc (math_trunc) has no
// conversion to fall back on.
ValuePtr round_to_int(Tracer& tracer, PyObject* function, const char* special, const ValuePtr& value) {
  PyTypeObject* type = type_of(value);
  if (type != &PyFloat_Type) {
    if (PyObject* method = special_method(tracer, value, special)) {
      if (PyFunction_Check(method)) return inline_special_method(tracer, value, special, method);
      // A builtin base's own (int.__ceil__, float.__floor__) reads the number the object is.
      return fold(function, {constant(builtin_number(tracer, value))});
    }
    if (std::strcmp(special, "__trunc__") == 0) type_error("type " + name_of(type, 100) + " doesn't define __trunc__ method");
  }
  return fold(function, {constant(check(PyFloat_FromDouble(as_double(tracer, value))))});
}

// The special method math.<function> calls, or null for other functions.
const char* rounding_special(PyObject* function) {
  static PyObject* const ceil = math_function("ceil");
  static PyObject* const floor = math_function("floor");
  static PyObject* const trunc = math_function("trunc");
  if (function == ceil) return "__ceil__";
  if (function == floor) return "__floor__";
  if (function == trunc) return "__trunc__";
  return nullptr;
}

bool is_to_base(PyObject* function) {
  return function == builtin_object("bin") || function == builtin_object("oct") || function == builtin_object("hex");
}

// An object from outside of a builtin type (object(), a class): the real function runs no
// Python code on it, and what it answers depends on the object alone (numbers are immutable),
// so it is called for real, the object pinned.
ValuePtr call_on_builtin_object(Tracer& tracer, PyObject* function, const ValuePtr& value) {
  PyObject* real = value->real_object();
  if (real == nullptr || value->is_tensor() || user_class(Py_TYPE(real)) || dynamic_cast<ObjectValue*>(value.get()))
    return nullptr;
  tracer.pin_identity(value);
  PyObject* result = PyObject_CallOneArg(function, real);
  if (result == nullptr) raise_current_error(py_repr(function));
  return from_folded(py::Ref<>::steal(result));
}

}  // namespace

void raise_current_error(const std::string& what) {
  PythonError error = PythonError::fetch();
  raise_folded_error(error, what + " raised " + error.what());
}

PyObject* special_method(Tracer& tracer, const ValuePtr& value, const char* name) {
  PyTypeObject* type = type_of(value);
  py::Ref<> key = check(PyUnicode_InternFromString(name));
  PyObject* found = _PyType_Lookup(type, key.get());  // borrowed
  // A user class can be given the method before the next call.
  if (found == nullptr && user_class(type))
    tracer.guards.add(GuardLog::Kind::LacksAttr, guards::class_source(reinterpret_cast<PyObject*>(type)), key.get());
  return found;
}

ValuePtr inline_special_method(Tracer& tracer, const ValuePtr& value, const char* name, PyObject* special) {
  if (!PyFunction_Check(special))
    unsupported("unsupported_builtin", std::string(name) + " of " + value->repr() + " is not a Python function");
  PyObject* type = value->python_type();
  return tracer.wrap_user_function(special, guards::class_attr_source(type, name))->call(tracer, {value}, {});
}

void raise_bad_arguments(PyObject* function, const Args& args, const KwArgs& kwargs) {
  Args nones(args.size(), ConstantValue::none());
  KwArgs named;
  for (const auto& [name, value] : kwargs) named.emplace_back(name, ConstantValue::none());
  fold(function, nones, named);
  unsupported("unsupported_builtin", "calling " + py_repr(function) + " with these arguments");
}

// _PyNumber_Index: an int (a subclass too) as it is, else __index__, whose result must be an
// int; PyNumber_Index then makes it an exact int.
ValuePtr index_of(Tracer& tracer, const ValuePtr& value) {
  ValuePtr number = specialize(tracer, value, kConcrete);
  if (number->is_tensor()) unsupported("unsupported_builtin", "a tensor used as an index at trace time");
  if (!follows_protocol(number) && number->is_constant()) return fold(operator_function("index"), {number});
  PyTypeObject* type = type_of(number);
  if (PyType_IsSubtype(type, &PyLong_Type)) return constant(builtin_number(tracer, number));
  PyObject* method = special_method(tracer, number, "__index__");
  if (method == nullptr) type_error("'" + name_of(type, 200) + "' object cannot be interpreted as an integer");
  ValuePtr result = specialize(tracer, inline_special_method(tracer, number, "__index__", method), kConcrete);
  PyTypeObject* result_type = type_of(result);
  if (!PyType_IsSubtype(result_type, &PyLong_Type)) type_error("__index__ returned non-int (type " + name_of(result_type, 200) + ")");
  if (result_type != &PyLong_Type)
    warn_deprecated("__index__ returned non-int (type " + name_of(result_type, 200) +
                    ").  The ability to return an instance of a strict subclass of int is deprecated, and may be "
                    "removed in a future version of Python.");
  return constant(builtin_number(tracer, result));
}

ValuePtr call_number_builtin(Tracer& tracer, PyObject* function, const Args& args, const KwArgs& kwargs) {
  const char* special = rounding_special(function);
  const bool is_index = function == operator_function("index");
  if (special == nullptr && !is_index && !is_to_base(function)) return nullptr;
  if (args.size() != 1 || !kwargs.empty()) raise_bad_arguments(function, args, kwargs);
  if (ValuePtr result = call_on_builtin_object(tracer, function, args[0])) return result;
  if (!follows_protocol(args[0])) return nullptr;  // constants of builtin types fold; tensors keep their paths
  if (special) return round_to_int(tracer, function, special, args[0]);
  ValuePtr index = index_of(tracer, args[0]);
  return is_index ? index : fold(function, {index});  // PyNumber_ToBase formats the index
}

}  // namespace bytegraph::trace
