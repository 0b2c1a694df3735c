// String formatting of symbolic values: see values/strings.h.
#include "trace/values/strings.h"

#include "python/type_dict.h"
#include "trace/operators.h"
#include "trace/symbolic.h"
#include "trace/values/exceptions.h"
#include "trace/values/sets.h"

namespace bytegraph::trace {

namespace {

[[noreturn]] void tensor_text(const ValuePtr& tensor) {
  unsupported("data_dependent_op", "formatting " + tensor->repr() + " reads its data");
}

// A real instance of a set subclass with the same members, made without running the class's
// code: set's own repr prints the class name and the members (a class's Python __repr__ or
// __str__ is inlined before this is asked).
py::Ref<> set_subclass_stand_in(Tracer& tracer, ObjectValue& object) {
  auto* type = reinterpret_cast<PyTypeObject*>(object.python_type());
  py::Ref<> members = object.set_storage(tracer)->keys(false);
  if (object.is_frozenset_subclass()) {
    py::Ref<> args = check(PyTuple_Pack(1, members.get()));
    return check(PyFrozenSet_Type.tp_new(type, args.get(), nullptr));
  }
  py::Ref<> no_args = check(PyTuple_New(0));
  py::Ref<> made = check(PySet_Type.tp_new(type, no_args.get(), nullptr));
  check(PyObject_CallFunctionObjArgs(py::own_type_attribute(&PySet_Type, "update"), made.get(), members.get(), nullptr));
  return made;
}

// The type of a C slot bound to an object (`None.__repr__`): not in the C API on every version.
PyTypeObject* method_wrapper_type() {
  static PyTypeObject* type = Py_TYPE(check(PyObject_GetAttrString(Py_None, "__repr__")).get());
  return type;
}

// The real object whose text stands for `value`, or null: objects whose str/repr run no user
// code and depend on the object alone.
py::Ref<> textual_object(Tracer& tracer, const ValuePtr& symbolic) {
  // Text holds a number's digits: a symbolic size or int is specialised to its value.
  ValuePtr value = specialize(tracer, symbolic, "formatting a number into a string needs its value");
  if (py::Ref<> constant = constant_of(value)) return constant;
  if (value->is_tensor()) tensor_text(value);
  if (py::Ref<> stand_in = exception_text_stand_in(value)) return stand_in;
  if (auto items = dynamic_cast<SequenceValue*>(value.get()))
    for (const auto& item : items->items)
      if (item->is_tensor()) tensor_text(item);
  if (auto* object = dynamic_cast<ObjectValue*>(value.get()); object && object->is_set_subclass())
    return set_subclass_stand_in(tracer, *object);
  PyObject* real = value->real_object();
  if (real == nullptr) return nullptr;
  PyTypeObject* type = Py_TYPE(real);
  bool plain_class = PyType_Check(real) && type->tp_repr == PyType_Type.tp_repr && type->tp_str == PyType_Type.tp_str;
  bool plain_module = PyModule_CheckExact(real);
  // C functions of a module or a class (torch.add), the descriptors of C classes (Tensor.add,
  // Tensor.shape) and their bound wrappers (Tensor.shape.__get__): immutable, so their text
  // is too while the identity holds.
  PyObject* self = PyCFunction_Check(real) ? PyCFunction_GET_SELF(real) : nullptr;
  bool builtin_function = self != nullptr && (PyModule_Check(self) || PyType_Check(self));
  bool c_descriptor = Py_IS_TYPE(real, &PyMethodDescr_Type) || Py_IS_TYPE(real, &PyWrapperDescr_Type) ||
                      Py_IS_TYPE(real, &PyGetSetDescr_Type) || Py_IS_TYPE(real, &PyClassMethodDescr_Type) ||
                      type == method_wrapper_type();
  if (!plain_class && !plain_module && !builtin_function && !c_descriptor) return nullptr;
  tracer.pin_identity(value);
  return py::Ref<>::newref(real);
}

py::Ref<> convert(PyObject* object, char conversion) {
  switch (conversion) {
    case 's': return check(PyObject_Str(object));
    case 'r': return check(PyObject_Repr(object));
    case 'a': return check(PyObject_ASCII(object));
    default: return py::Ref<>::newref(object);
  }
}

PyObject* class_lookup(PyObject* type, const char* name) {
  py::Ref<> key = check(PyUnicode_FromString(name));
  return _PyType_Lookup(reinterpret_cast<PyTypeObject*>(type), key.get());  // borrowed
}

PyObject* object_method(const char* name) {
  return class_lookup(reinterpret_cast<PyObject*>(&PyBaseObject_Type), name);
}

}  // namespace

ValuePtr object_text(Tracer& tracer, const ValuePtr& value, char conversion) {
  auto* object = dynamic_cast<ObjectValue*>(value.get());
  if (object == nullptr) return nullptr;
  PyObject* type = object->python_type();
  if (conversion == 'f') {
    if (class_lookup(type, "__format__") != object_method("__format__")) return nullptr;
    conversion = 's';
  }
  const char* method = conversion == 'r' ? "__repr__" : "__str__";
  // object.__str__ is repr(): a class that defines only __repr__ prints with it.
  if (conversion == 's' && class_lookup(type, "__str__") == object_method("__str__")) method = "__repr__";
  ValuePtr text = object->inline_special(tracer, method, {});
  if (!text) return nullptr;
  if (!text->is_constant() || !PyUnicode_Check(text->constant()))
    unsupported("unsupported_format", std::string(method) + " of " + value->repr() + " returned " + text->repr());
  return text;
}

py::Ref<> formattable_object(Tracer& tracer, const ValuePtr& value, const char* what) {
  py::Ref<> object = textual_object(tracer, value);
  if (!object) unsupported("unsupported_format", std::string(what) + " of " + value->repr());
  return object;
}

ValuePtr stringify(Tracer& tracer, const ValuePtr& value, char conversion) {
  if (conversion != 'a')
    if (ValuePtr text = object_text(tracer, value, conversion)) return text;
  py::Ref<> object = formattable_object(tracer, value, conversion == 'r' ? "repr()" : "str()");
  return ConstantValue::make(convert(object.get(), conversion));
}

ValuePtr format_value(Tracer& tracer, const ValuePtr& value, const ValuePtr& spec) {
  py::Ref<> object = formattable_object(tracer, value, "format()");
  py::Ref<> spec_object = spec ? formattable_object(tracer, spec, "a format spec") : py::Ref<>();
  return ConstantValue::make(check(PyObject_Format(object.get(), spec_object.get())));
}

ValuePtr format_operator(Tracer& tracer, PyObject* function, const Args& operands) {
  if (function != operator_function("mod") || operands.size() != 2 || !operands[0]->is_constant()) return nullptr;
  PyObject* format = operands[0]->constant();
  if (!PyUnicode_Check(format) && !PyBytes_Check(format)) return nullptr;
  py::Ref<> arguments;
  if (auto* tuple = dynamic_cast<SequenceValue*>(operands[1].get()); tuple && !tuple->is_list()) {
    arguments = check(PyTuple_New(static_cast<Py_ssize_t>(tuple->items.size())));
    for (size_t i = 0; i < tuple->items.size(); ++i)
      PyTuple_SET_ITEM(arguments.get(), static_cast<Py_ssize_t>(i), formattable_object(tracer, tuple->items[i], "%-formatting").release());
  } else {
    arguments = formattable_object(tracer, operands[1], "%-formatting");
  }
  PyObject* result = PyNumber_Remainder(format, arguments.get());
  if (result == nullptr) {
    PythonError error = PythonError::fetch();
    unsupported("constant_fold_raised", std::string("%-formatting raised ") + error.what());
  }
  return ConstantValue::make(py::Ref<>::steal(result));
}

}  // namespace bytegraph::trace
