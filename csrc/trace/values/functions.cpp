// Callables: user functions (inlined), bound methods, torch functions (recorded), the
// explicit graph break, and opaque objects.
#include "python/import.h"
#include "trace/values/numpy_array.h"
#include "trace/operators.h"
#include "trace/plan_writer.h"
#include "trace/tracer.h"
#include "trace/values/exceptions.h"
#include "trace/values/itertools.h"
#include "trace/values/partial.h"

namespace bytegraph::trace {

std::string UserFunctionValue::repr() const { return "UserFunctionVariable(" + name + ")"; }

namespace {

// inspect.signature(f) of a function the trace knows (its code and defaults are guarded where
// it was read): computed for real, as inspect's own frames would only reach id() and
// attribute reads of method objects that do not exist in the trace. Null: not foldable.
ValuePtr folded_signature(const Args& args, const KwArgs& kwargs) {
  if (args.size() != 1 || !kwargs.empty()) return nullptr;
  PyObject* function = args[0]->real_object();
  bool of_method = false;
  if (auto* method = dynamic_cast<BoundMethodValue*>(args[0].get())) {
    function = method->function->real_object();
    of_method = true;
  }
  if (function == nullptr || !PyFunction_Check(function)) return nullptr;
  py::Ref<> flag = py::Ref<>::newref(of_method ? Py_True : Py_False);
  py::Ref<> signature = check(PyObject_CallFunctionObjArgs(Bridge::get().signature_of.get(), function, flag.get(), nullptr));
  if (signature.get() == Py_None) return nullptr;
  return ConstantValue::make(std::move(signature));
}

}  // namespace

ValuePtr UserFunctionValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (function && function.get() == Bridge::get().inspect_signature.get()) {
    if (ValuePtr folded = folded_signature(args, kwargs)) return folded;
  }
  return tracer.inline_call(*this, args, kwargs);
}

namespace {

// A function's attributes that are slots of the function object, not entries of its __dict__.
bool is_function_slot(const std::string& attr) {
  static const char* slots[] = {"__name__", "__qualname__", "__doc__", "__module__", "__annotations__",
                                "__type_params__", "__defaults__", "__kwdefaults__"};
  for (const char* slot : slots)
    if (attr == slot) return true;
  return false;
}

}  // namespace

std::shared_ptr<DictValue> UserFunctionValue::attribute_dict() {
  if (!dict_) dict_ = std::make_shared<DictValue>();
  return dict_;
}

// What a function made by MAKE_FUNCTION in the trace has, as CPython sets it up.
ValuePtr UserFunctionValue::made_function_attribute(Tracer&, const std::string& attr) {
  for (const auto& [written, value] : written_)
    if (written == attr) return value;
  auto* code_object = reinterpret_cast<PyCodeObject*>(code.get());
  if (attr == "__qualname__") return ConstantValue::make(py::Ref<>::newref(code_object->co_qualname));
  if (attr == "__module__") {
    PyObject* module = PyDict_GetItemString(globals.get(), "__name__");  // borrowed
    return module ? ConstantValue::make(py::Ref<>::newref(module)) : ConstantValue::none();
  }
  if (attr == "__doc__") {
    PyObject* consts = code_object->co_consts;
    bool has_doc = PyTuple_GET_SIZE(consts) > 0 && PyUnicode_Check(PyTuple_GET_ITEM(consts, 0));
    return has_doc ? ConstantValue::make(py::Ref<>::newref(PyTuple_GET_ITEM(consts, 0))) : ConstantValue::none();
  }
  if (attr == "__dict__") return attribute_dict();
  if (attr == "__annotations__") {
    ValuePtr annotations = std::make_shared<DictValue>();
    written_.emplace_back(attr, annotations);  // made once, then the same dict
    return annotations;
  }
  if (attr == "__type_params__") return ConstantValue::make(check(PyTuple_New(0)));
  if (attr == "__defaults__") {
    if (defaults.empty()) return ConstantValue::none();
    return std::make_shared<SequenceValue>(false, defaults);
  }
  if (attr == "__kwdefaults__" && kwdefaults.empty()) return ConstantValue::none();
  if (dict_) {
    py::Ref<> key = check(PyUnicode_FromString(attr.c_str()));
    int index = dict_->find(key.get());
    if (index >= 0) return dict_->values[index];
  }
  raise_error("attribute_error", PyExc_AttributeError, "'function' object has no attribute '" + attr + "'");
}

std::function<void()> UserFunctionValue::saved_state() {
  auto written = written_;
  auto saved_name = name;
  return [this, written, saved_name] {
    written_ = written;
    name = saved_name;
  };
}

void UserFunctionValue::set_attr(Tracer& tracer, const std::string& attr, const ValuePtr& value) {
  if (function || source()) unsupported("side_effect", "setting attribute '" + attr + "' of " + repr());
  tracer.journal.save(shared_from_this());
  if (!is_function_slot(attr)) {
    std::shared_ptr<DictValue> dict = attribute_dict();
    tracer.journal.save(dict);
    dict->set_item(check(PyUnicode_FromString(attr.c_str())).get(), value);
    return;
  }
  if (attr == "__name__") {
    if (!value->is_constant() || !PyUnicode_Check(value->constant()))
      raise_error("python_error", PyExc_TypeError, "__name__ must be set to a string object");
    name = PyUnicode_AsUTF8(value->constant());
  }
  for (auto& [written, current] : written_) {
    if (written == attr) {
      current = value;
      return;
    }
  }
  written_.emplace_back(attr, value);
}

ValuePtr UserFunctionValue::get_attr(Tracer& tracer, const std::string& attr) {
  if (attr == "__name__") return ConstantValue::make(check(PyUnicode_FromString(name.c_str())));
  if (!function && attr != "__code__" && attr != "__call__") return made_function_attribute(tracer, attr);
  if (attr == "__code__") return ConstantValue::make(code.copy());
  if (attr == "__call__") return shared_from_this();
  // A real function's own attributes (`__wrapped__` set by functools.wraps, `__qualname__`,
  // `__module__`, `__doc__`): plain data, read where they are and guarded there.
  static const char* metadata[] = {"__qualname__", "__module__", "__doc__"};
  bool is_metadata = false;
  for (const char* known : metadata) is_metadata = is_metadata || attr == known;
  PyObject** instance_dict = function ? _PyObject_GetDictPtr(function.get()) : nullptr;
  bool in_dict = instance_dict && *instance_dict && PyDict_GetItemString(*instance_dict, attr.c_str());
  if (function && (is_metadata || in_dict)) {
    py::Ref<> real = check(PyObject_GetAttrString(function.get(), attr.c_str()));
    return tracer.wrap(real.get(), source() ? guards::attr_source(source(), attr) : nullptr);
  }
  if (function && source()) {
    py::Ref<> name_object = check(PyUnicode_InternFromString(attr.c_str()));
    PyObject* on_type = _PyType_Lookup(&PyFunction_Type, name_object.get());  // borrowed
    if (on_type != nullptr && Py_TYPE(on_type)->tp_descr_set != nullptr) {
      // The function object's own fields (__defaults__, __kwdefaults__, __globals__, ...):
      // read where they are, guarded there.
      py::Ref<> real = check(PyObject_GetAttrString(function.get(), attr.c_str()));
      return tracer.wrap(real.get(), guards::attr_source(source(), attr));
    }
    if (on_type == nullptr) {
      // Neither the function's __dict__ nor its type has it: an AttributeError, while the
      // __dict__ lacks the name.
      tracer.guards.add(GuardLog::Kind::LacksKey, guards::instance_dict_of(source()), name_object.get());
      raise_error("attribute_error", PyExc_AttributeError, "'function' object has no attribute '" + attr + "'");
    }
  }
  unsupported("unsupported_attribute", repr() + "." + attr);
}

std::string BoundMethodValue::repr() const {
  return "UserMethodVariable(" + function->repr() + ", " + self->repr() + ")";
}

ValuePtr BoundMethodValue::get_attr(Tracer& tracer, const std::string& attr) {
  if (attr == "__func__") return function;
  if (attr == "__self__") return self;
  if (attr == "__call__") return shared_from_this();
  return function->get_attr(tracer, attr);
}

std::optional<codegen::OutputPlan> BoundMethodValue::remake(PlanWriter& writer) {
  codegen::OutputPlan plan;
  plan.kind = codegen::OutputPlan::Kind::BoundMethod;
  py::Ref<> types = check(PyImport_ImportModule("types"));
  plan.constant = check(PyObject_GetAttrString(types.get(), "MethodType"));
  if (function->source()) {
    plan.items.push_back(writer.plan(function));
  } else if (PyObject* real = function->real_object()) {
    plan.items.push_back(codegen::OutputPlan::of_constant(real));
  } else {
    throw NotRestorable{repr()};
  }
  plan.items.push_back(writer.plan(self));
  return plan;
}

ValuePtr BoundMethodValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  Args all{self};
  all.insert(all.end(), args.begin(), args.end());
  return function->call(tracer, all, kwargs);
}

std::string TorchFunctionValue::repr() const {
  py::Ref<> name = py::Ref<>::steal(PyObject_GetAttrString(function_.get(), "__name__"));
  if (!name) PyErr_Clear();
  return "TorchInGraphFunctionVariable(" + (name ? py_str(name.get()) : py_repr(function_.get())) + ")";
}

ValuePtr TorchFunctionValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (ValuePtr tensor = tensor_of_array(function_.get(), args, kwargs)) return tensor;  // torch.from_numpy(a)
  return tracer.record(graph::Op::CallFunction, function_.copy(), args, kwargs);
}

ValuePtr TorchFunctionValue::get_attr(Tracer& tracer, const std::string& name) {
  // e.g. torch.Tensor.add used as a function, or attributes of torch submodules reached
  // through a function object: wrap the real attribute.
  PyObject* attribute = PyObject_GetAttrString(function_.get(), name.c_str());
  if (attribute == nullptr) {
    PyErr_Clear();
    unsupported("unsupported_attribute", repr() + "." + name);
  }
  py::Ref<> owned = py::Ref<>::steal(attribute);
  return tracer.wrap(owned.get(), source() ? guards::attr_source(source(), name) : nullptr);
}

ValuePtr GraphBreakValue::call(Tracer&, const Args&, const KwArgs&) { unsupported(kind_, message_); }

std::string FoldedCallValue::repr() const {
  py::Ref<> name = py::Ref<>::steal(PyObject_GetAttrString(function_.get(), "__qualname__"));
  if (!name) PyErr_Clear();
  return "FoldedCallVariable(" + (name ? py_str(name.get()) : py_repr(function_.get())) + ")";
}

ValuePtr FoldedCallValue::call(Tracer&, const Args&, const KwArgs&) { return ConstantValue::make(result_.copy()); }

std::string OpaqueValue::repr() const {
  if (PyType_Check(object_.get()))
    return "ClassVariable(" + std::string(reinterpret_cast<PyTypeObject*>(object_.get())->tp_name) + ")";
  return "ObjectVariable(" + std::string(Py_TYPE(object_.get())->tp_name) + ")";
}

namespace {

// An attribute read that runs no user code: found in the instance's __dict__, or a plain
// function, constant or class found on the type (no properties, no __getattr__).
PyObject* static_attribute(PyObject* object, const std::string& name, bool* from_instance) {
  *from_instance = false;
  if (!PyType_Check(object)) {
    PyObject** dict = _PyObject_GetDictPtr(object);
    if (dict && *dict) {
      if (PyObject* found = PyDict_GetItemString(*dict, name.c_str())) {
        *from_instance = true;
        return found;  // borrowed
      }
    }
  }
  PyTypeObject* type = PyType_Check(object) ? reinterpret_cast<PyTypeObject*>(object) : Py_TYPE(object);
  py::Ref<> key = check(PyUnicode_FromString(name.c_str()));
  PyObject* found = _PyType_Lookup(type, key.get());  // borrowed
  if (found == nullptr) return nullptr;
  if (PyFunction_Check(found) || !Py_TYPE(found)->tp_descr_get) return found;
  return nullptr;
}

}  // namespace

namespace {

ValuePtr wrap_class_attribute(Tracer& tracer, PyObject* found, const guards::SourcePtr& source) {
  bool descriptor = PyObject_TypeCheck(found, &PyWrapperDescr_Type) || PyObject_TypeCheck(found, &PyMethodDescr_Type);
  if (descriptor && classify(found) == ObjectKind::Unknown) {
    // A builtin base's method reached through a user class (CustomSet.__sub__, MyDict.keys):
    // applied to the symbolic object it is called on, as on the base class itself.
    tracer.guards.add(GuardLog::Kind::Id, source, found);
    return std::make_shared<BuiltinValue>(py::Ref<>::newref(found), source);
  }
  return tracer.wrap(found, source);
}

}  // namespace

ValuePtr OpaqueValue::get_attr(Tracer& tracer, const std::string& name) {
  bool from_instance = false;
  PyObject* found = static_attribute(object_.get(), name, &from_instance);
  if (found == nullptr) {
    if (PyType_Check(object_.get())) {
      // Class attributes with descriptors (staticmethod, classmethod): let getattr bind them.
      PyObject* attribute = PyObject_GetAttrString(object_.get(), name.c_str());
      if (attribute == nullptr) {
        PythonError error = PythonError::fetch();
        unsupported("unsupported_attribute", error.what());
      }
      py::Ref<> owned = py::Ref<>::steal(attribute);
      return wrap_class_attribute(tracer, owned.get(), source() ? guards::attr_source(source(), name) : nullptr);
    }
    // An attribute a C type defines in C (a method-wrapper's __self__, a descriptor's
    // __name__): reading it runs no Python code; what it reads is guarded where it is.
    PyTypeObject* type = Py_TYPE(object_.get());
    py::Ref<> key = check(PyUnicode_FromString(name.c_str()));
    PyObject* descriptor = _PyType_Lookup(type, key.get());  // borrowed
    bool c_attribute = descriptor != nullptr && type->tp_getattro == PyObject_GenericGetAttr &&
                       (Py_IS_TYPE(descriptor, &PyGetSetDescr_Type) || Py_IS_TYPE(descriptor, &PyMemberDescr_Type)) &&
                       !(PyDescr_TYPE(descriptor)->tp_flags & Py_TPFLAGS_HEAPTYPE);
    if (c_attribute && source()) {
      py::Ref<> value = check(PyObject_GetAttr(object_.get(), key.get()));
      return tracer.wrap(value.get(), guards::attr_source(source(), name));
    }
    unsupported("unsupported_attribute", "getattr(" + repr() + ", '" + name + "') may run Python code");
  }
  if (PyFunction_Check(found) && !from_instance && !PyType_Check(object_.get())) {
    guards::SourcePtr method = guards::class_attr_source((PyObject*)Py_TYPE(object_.get()), name);
    return std::make_shared<BoundMethodValue>(tracer.wrap_user_function(found, method), shared_from_this());
  }
  return wrap_class_attribute(tracer, found, source() ? guards::attr_source(source(), name) : nullptr);
}

ValuePtr BuiltinValue::get_attr(Tracer& tracer, const std::string& name) {
  // str.join, dict.fromkeys, int.from_bytes: attributes of builtin types.
  PyObject* attribute = PyObject_GetAttrString(function_.get(), name.c_str());
  if (attribute == nullptr) {
    PythonError error = PythonError::fetch();
    unsupported("unsupported_attribute", error.what());
  }
  py::Ref<> owned = py::Ref<>::steal(attribute);
  if (PyCallable_Check(owned.get()) && !PyType_Check(owned.get())) return std::make_shared<BuiltinValue>(std::move(owned));
  return tracer.wrap(owned.get(), nullptr);
}

ValuePtr OpaqueValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (ValuePtr iterator = call_itertools(tracer, object_.get(), args, kwargs)) return iterator;
  if (ValuePtr reduced = call_reduce(tracer, object_.get(), args, kwargs)) return reduced;
  static PyObject* getframe = [] {
    py::Ref<> sys = import_module("sys");
    return check(PyObject_GetAttrString(sys.get(), "_getframe")).release();  // kept for the process
  }();
  if (object_.get() == getframe) unsupported("frame_introspection", "sys._getframe() reads the calling frame");
  unsupported("unsupported_call", "calling " + py_repr(object_.get()) + ", which bytegraph cannot trace");
}

}  // namespace bytegraph::trace
