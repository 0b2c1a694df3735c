// Exception objects and raising them: see values/exceptions.h.
#include "trace/values/exceptions.h"

#include <cstring>

#include "python/type_dict.h"
#include "trace/operators.h"

namespace bytegraph::trace {

namespace {

PyObject* type_lookup(PyObject* type, const char* name) {
  py::Ref<> key = check(PyUnicode_FromString(name));
  return _PyType_Lookup(reinterpret_cast<PyTypeObject*>(type), key.get());  // borrowed
}

bool subclass_of(PyObject* type, PyObject* base) {
  return PyType_Check(type) && PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type), reinterpret_cast<PyTypeObject*>(base));
}

// The builtin exception bases with fields of their own that a new exception can model: each
// field is None until set (StopIteration's value comes from its first argument).
bool has_modelled_fields(PyTypeObject* base) {
  PyObject* type = reinterpret_cast<PyObject*>(base);
  return type == PyExc_AttributeError || type == PyExc_NameError || type == PyExc_StopIteration;
}

// Whether instances of `type` are modelled symbolically: every builtin base keeps no state
// beyond BaseException's, or only fields listed above.
bool models(PyObject* type) {
  for (PyTypeObject* base = reinterpret_cast<PyTypeObject*>(type); base != nullptr; base = base->tp_base) {
    if (PyType_HasFeature(base, Py_TPFLAGS_HEAPTYPE) || base == &PyBaseObject_Type) continue;
    if (base->tp_basicsize != reinterpret_cast<PyTypeObject*>(PyExc_BaseException)->tp_basicsize &&
        !has_modelled_fields(base))
      return false;
  }
  return true;
}

constexpr const char* kStateSlots[] = {"args", "__context__", "__cause__", "__suppress_context__", "__traceback__"};

ValuePtr make_tuple(const Args& items) { return std::make_shared<SequenceValue>(false, items); }

ValuePtr constant(PyObject* object) { return ConstantValue::make(py::Ref<>::newref(object)); }

std::string type_name(PyObject* type) { return reinterpret_cast<PyTypeObject*>(type)->tp_name; }

// Writes one state attribute of an exception made in the trace (journaled for rollback).
void write_slot(Tracer* tracer, ObjectValue& exception, const std::string& name, ValuePtr value) {
  if (tracer) tracer->will_mutate(exception.shared_from_this());
  assign_named(exception.attrs, name, std::move(value));
}

// A new exception object as BaseException.__new__ leaves it: args set to the call's arguments.
std::shared_ptr<ObjectValue> new_exception(PyObject* type, const Args& args, guards::SourcePtr class_source) {
  auto exception = std::make_shared<ObjectValue>(py::Ref<>::newref(type), py::Ref<>(), nullptr);
  exception->class_source = std::move(class_source);
  exception->attrs.emplace_back("args", make_tuple(args));
  if (subclass_of(type, PyExc_StopIteration))
    exception->attrs.emplace_back("value", args.empty() ? ConstantValue::none() : args[0]);
  return exception;
}

bool constant_arguments(const Args& args, const KwArgs& kwargs) {
  for (const ValuePtr& arg : args)
    if (!arg->is_constant()) return false;
  for (const auto& [name, value] : kwargs)
    if (!value->is_constant()) return false;
  return true;
}

// An exception of a class the trace does not model, made for real from constant arguments
// (the exception classes' constructors run no user code).
ValuePtr make_real_exception(PyObject* type, const Args& args, const KwArgs& kwargs) {
  if (PyType_HasFeature(reinterpret_cast<PyTypeObject*>(type), Py_TPFLAGS_HEAPTYPE) || !constant_arguments(args, kwargs))
    unsupported("unsupported_call", "making an instance of " + type_name(type) + " (its builtin base keeps state "
                                    "of its own) from these arguments");
  py::Ref<> real = check(call_with_constants(type, args, kwargs));
  return std::make_shared<ObjectValue>(py::Ref<>::newref(type), std::move(real), nullptr);
}

// `raise X` with a class: its instance made with no arguments.
ValuePtr instantiate(Tracer& tracer, const ValuePtr& value, const char* what) {
  if (PyObject* real = value->real_object(); real != nullptr && PyType_Check(real)) {
    if (!is_exception_class(real))
      raise_error("python_error", PyExc_TypeError, std::string(what) + " must derive from BaseException");
    ValuePtr made = value->call(tracer, {}, {});
    if (!is_exception(*made))
      raise_error("python_error", PyExc_TypeError, std::string("calling ") + value->repr() +
                                                                " should have returned an instance of BaseException");
    return made;
  }
  if (!is_exception(*value))
    raise_error("python_error", PyExc_TypeError, std::string(what) + " must derive from BaseException");
  return value;
}

// The state attribute as the trace wrote it, or null.
ValuePtr written(const ObjectValue& exception, const std::string& name) {
  for (const auto& [attr, value] : exception.attrs)
    if (attr == name && value) return value;
  return nullptr;
}

std::string describe(const ValuePtr& exception) {
  if (py::Ref<> stand_in = exception_text_stand_in(exception)) return py_repr(stand_in.get());
  return exception->repr();
}

}  // namespace

bool is_exception_class(PyObject* type) { return subclass_of(type, PyExc_BaseException); }

bool is_instance_of(const Value& value, PyObject* type) {
  PyObject* own = value.python_type();
  return own != nullptr && subclass_of(own, type);
}

bool Raised::is_a(PyObject* type) const { return is_instance_of(*exception_, type); }

bool is_exception(const Value& value) {
  PyObject* type = value.python_type();
  return type != nullptr && is_exception_class(type) && dynamic_cast<const ObjectValue*>(&value) != nullptr;
}

ValuePtr make_exception(Tracer& tracer, PyObject* type, const Args& args, const KwArgs& kwargs,
                        guards::SourcePtr class_source) {
  PyObject* new_method = type_lookup(type, "__new__");
  if (new_method == nullptr || PyFunction_Check(new_method) || Py_TYPE(new_method) == &PyStaticMethod_Type)
    unsupported("unsupported_call", "making an instance of " + type_name(type) + ", whose class defines __new__");
  if (!models(type)) return make_real_exception(type, args, kwargs);
  std::shared_ptr<ObjectValue> exception = new_exception(type, args, std::move(class_source));
  PyObject* init = type_lookup(type, "__init__");
  if (init != nullptr && PyFunction_Check(init)) {
    Args all{exception};
    all.insert(all.end(), args.begin(), args.end());
    tracer.wrap_user_function(init, guards::class_attr_source(type, "__init__"))->call(tracer, all, kwargs);
  } else {
    init_exception(tracer, *exception, args, kwargs);
  }
  return exception;
}

ValuePtr exception_from_python(Tracer& tracer, PyObject* real) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(real));
  auto real_backed = [&] { return std::make_shared<ObjectValue>(py::Ref<>::newref(type), py::Ref<>::newref(real), nullptr); };
  if (!models(type)) return real_backed();
  try {
    py::Ref<> real_args = check(PyObject_GetAttrString(real, "args"));
    Args args;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(real_args.get()); ++i)
      args.push_back(tracer.wrap(PyTuple_GET_ITEM(real_args.get(), i), nullptr));
    std::shared_ptr<ObjectValue> exception = new_exception(type, args, nullptr);
    for (const char* field : {"name", "obj", "value"}) {
      if (!is_exception_slot(type, field)) continue;
      py::Ref<> value = check(PyObject_GetAttrString(real, field));
      if (value.get() != Py_None) write_slot(nullptr, *exception, field, tracer.wrap(value.get(), nullptr));
    }
    return exception;
  } catch (const Unsupported&) {
    return real_backed();
  }
}

bool is_exception_slot(PyObject* type, const std::string& name) {
  if (!is_exception_class(type)) return false;
  for (const char* slot : kStateSlots)
    if (name == slot) return true;
  if (name == "name") return subclass_of(type, PyExc_AttributeError) || subclass_of(type, PyExc_NameError);
  if (name == "obj") return subclass_of(type, PyExc_AttributeError);
  if (name == "value") return subclass_of(type, PyExc_StopIteration);
  return false;
}

ValuePtr exception_slot(Tracer& tracer, const ObjectValue& exception, const std::string& name) {
  if (name == "__context__")
    for (const ValuePtr& unknown : tracer.exceptions_with_outside_context)
      if (unknown.get() == &exception)
        unsupported("unsupported_attribute", "the __context__ of " + exception.repr() + ", raised outside the trace's "
                                             "except blocks, is the caller's handled exception");
  if (ValuePtr value = written(exception, name)) return value;
  if (name == "args") return make_tuple({});
  if (name == "__suppress_context__") return constant(Py_False);
  return ConstantValue::none();
}

void init_exception(Tracer& tracer, ObjectValue& exception, const Args& args, const KwArgs& kwargs) {
  PyObject* type = exception.python_type();
  for (const auto& [name, value] : kwargs) {
    // AttributeError(msg, name=..., obj=...), NameError(msg, name=...): their own fields.
    if ((name == "name" || name == "obj") && is_exception_slot(type, name)) {
      write_slot(&tracer, exception, name, value);
      continue;
    }
    raise_error("python_error", PyExc_TypeError, type_name(type) + "() got an unexpected keyword argument '" + name + "'");
  }
  write_slot(&tracer, exception, "args", make_tuple(args));
  if (subclass_of(type, PyExc_StopIteration))
    write_slot(&tracer, exception, "value", args.empty() ? ConstantValue::none() : args[0]);
}

py::Ref<> exception_text_stand_in(const ValuePtr& value) {
  auto* exception = dynamic_cast<ObjectValue*>(value.get());
  if (exception == nullptr || !is_exception(*exception)) return {};
  PyObject* type = exception->python_type();
  for (const char* method : {"__str__", "__repr__"}) {
    PyObject* found = type_lookup(type, method);
    if (found == nullptr || PyFunction_Check(found)) return {};
  }
  if (!exception->is_new()) return py::Ref<>::newref(exception->real_object());
  auto* args = dynamic_cast<SequenceValue*>(written(*exception, "args").get());
  if (args == nullptr) return {};
  py::Ref<> tuple = check(PyTuple_New(static_cast<Py_ssize_t>(args->items.size())));
  for (size_t i = 0; i < args->items.size(); ++i) {
    py::Ref<> item = constant_of(args->items[i]);
    if (!item) return {};
    PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(i), item.release());
  }
  // BaseException.__new__ alone: the class's Python __init__ (which may do anything) is not run.
  return check(reinterpret_cast<PyTypeObject*>(type)->tp_new(reinterpret_cast<PyTypeObject*>(type), tuple.get(), nullptr));
}

void raise_value(Tracer& tracer, ValuePtr exception, ValuePtr cause) {
  ValuePtr raised = instantiate(tracer, exception, "exceptions");
  if (cause) {
    auto* object = dynamic_cast<ObjectValue*>(raised.get());
    ValuePtr cause_value = cause->is_constant() && cause->constant() == Py_None ? cause : instantiate(tracer, cause, "exception causes");
    if (object == nullptr || !object->is_new())
      unsupported("side_effect", "setting the cause of " + raised->repr() + ", an exception from outside the trace");
    write_slot(&tracer, *object, "__cause__", cause_value);
    write_slot(&tracer, *object, "__suppress_context__", constant(Py_True));
  }
  throw Raised(raised, "uncaught_exception", describe(raised) + " is raised and not caught in the compiled code");
}

void reraise(const ValuePtr& exception) {
  throw Raised(exception, "uncaught_exception", describe(exception) + " is raised and not caught in the compiled code",
               /*reraise=*/true);
}

void raise_error(const std::string& kind, PyObject* type, ValuePtr arg) {
  Args args;
  if (arg) args.push_back(std::move(arg));
  ValuePtr exception = models(type) ? ValuePtr(new_exception(type, args, nullptr)) : make_real_exception(type, args, {});
  py::Ref<> stand_in = exception_text_stand_in(exception);
  std::string text = stand_in ? py_str(stand_in.get()) : args.empty() ? std::string() : args[0]->repr();
  throw Raised(std::move(exception), kind, type_name(type) + (text.empty() ? "" : ": " + text));
}

void raise_error(const std::string& kind, PyObject* type, const std::string& text) {
  raise_error(kind, type, ConstantValue::make(check(PyUnicode_FromString(text.c_str()))));
}

void raise_python_error(Tracer& tracer, const PythonError& error, const char* kind) {
  throw Raised(exception_from_python(tracer, error.value()), kind, error.what());
}

ValuePtr stop_iteration_error(const ValuePtr& exception) {
  PyObject* type = exception->python_type();
  if (type == nullptr || !subclass_of(type, PyExc_StopIteration)) return exception;
  ValuePtr message = ConstantValue::make(check(PyUnicode_FromString("generator raised StopIteration")));
  std::shared_ptr<ObjectValue> error = new_exception(PyExc_RuntimeError, {message}, nullptr);
  write_slot(nullptr, *error, "__cause__", exception);
  write_slot(nullptr, *error, "__context__", exception);
  write_slot(nullptr, *error, "__suppress_context__", constant(Py_True));
  return error;
}

namespace {

bool literal(PyObject* object) {
  if (object == Py_None || PyBool_Check(object) || PyLong_CheckExact(object) || PyFloat_CheckExact(object) ||
      PyUnicode_CheckExact(object) || PyBytes_CheckExact(object))
    return true;
  if (!PyTuple_CheckExact(object)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(object); ++i)
    if (!literal(PyTuple_GET_ITEM(object, i))) return false;
  return true;
}

}  // namespace

void raise_folded_error(const PythonError& error, const std::string& message) {
  PyObject* real = error.value();
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(real));
  ValuePtr exception;
  py::Ref<> real_args = py::Ref<>::steal(PyObject_GetAttrString(real, "args"));
  if (!real_args) PyErr_Clear();
  if (models(type) && real_args && PyTuple_Check(real_args.get()) && literal(real_args.get()) &&
      !is_exception_slot(type, "name") && !subclass_of(type, PyExc_StopIteration)) {
    Args args;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(real_args.get()); ++i)
      args.push_back(ConstantValue::make(py::Ref<>::newref(PyTuple_GET_ITEM(real_args.get(), i))));
    exception = new_exception(type, args, nullptr);
  } else {
    exception = std::make_shared<ObjectValue>(py::Ref<>::newref(type), py::Ref<>::newref(real), nullptr);
  }
  throw Raised(std::move(exception), "constant_fold_raised", message);
}

ValuePtr HandledExceptionQueryValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (!args.empty() || !kwargs.empty())
    raise_error("bad_call", PyExc_TypeError, repr() + "() takes no arguments");
  ValuePtr handled = tracer.handled_exception;
  if (!handled) {
    // Outside the trace's except blocks: the caller's handled exception.
    auto outside = py::Ref<>::steal(PyErr_GetHandledException());
    if (outside && outside.get() != Py_None)
      unsupported("unsupported_call", repr() + "() while the caller handles an exception");
    tracer.read_no_handled_exception = true;
    handled = ConstantValue::none();
  }
  if (!exc_info_) return handled;
  if (handled->is_constant()) return std::make_shared<SequenceValue>(false, Args{handled, handled, handled});
  ValuePtr type = tracer.wrap(handled->python_type(), nullptr);
  return std::make_shared<SequenceValue>(false, Args{type, handled, handled->get_attr(tracer, "__traceback__")});
}

void chain_context(Tracer& tracer, Raised& raised) {
  if (raised.context_set()) return;
  raised.mark_context_set();
  const ValuePtr& handled = tracer.handled_exception;
  // Outside any handler of the trace, the context is the caller's handled exception, if any:
  // the trace does not know it (reading it is a break).
  auto* object = dynamic_cast<ObjectValue*>(raised.exception().get());
  if (object == nullptr || !object->is_new()) return;
  if (!handled) {
    tracer.exceptions_with_outside_context.push_back(raised.exception());
    return;
  }
  if (handled->is_constant() || handled == raised.exception()) return;
  write_slot(&tracer, *object, "__context__", handled);
}

}  // namespace bytegraph::trace
