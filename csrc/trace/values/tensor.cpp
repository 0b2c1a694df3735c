// Tensors: graph nodes with fake values. Metadata (shape, dtype, size(), dim()) is read
// from the fake and folded to constants; everything else is recorded.
#include <unordered_map>

#include "trace/values/numpy_array.h"
#include "trace/operators.h"
#include "trace/symbolic.h"
#include "trace/tracer.h"
#include "guards/tensor_meta.h"
#include "trace/values/torch_function.h"
#include "python/import.h"

namespace bytegraph::trace {

namespace {

enum class TensorAttr { Constant, Method, Property, Break, Class, Grad, Missing };

TensorAttr tensor_attribute_kind(const std::string& name) {
  static std::unordered_map<std::string, TensorAttr> cache;
  auto found = cache.find(name);
  if (found != cache.end()) return found->second;
  py::Ref<> text = check(PyObject_CallFunction(Bridge::get().tensor_attribute_kind.get(), "s", name.c_str()));
  std::string kind = PyUnicode_AsUTF8(text.get());
  TensorAttr result = kind == "constant" ? TensorAttr::Constant
                      : kind == "method" ? TensorAttr::Method
                      : kind == "property" ? TensorAttr::Property
                      : kind == "break" ? TensorAttr::Break
                      : kind == "class" ? TensorAttr::Class
                      : kind == "grad" ? TensorAttr::Grad
                                           : TensorAttr::Missing;
  cache.emplace(name, result);
  return result;
}

bool is_constant_method(const std::string& name) {
  py::Ref<> text = check(PyUnicode_FromString(name.c_str()));
  int found = PySet_Contains(Bridge::get().tensor_constant_methods.get(), text.get());
  check_status(found);
  return found == 1;
}

// Whether `name` is one of the inner tensors a traceable wrapper subclass flattens into (a
// NestedTensor's _values and _offsets, kept in its instance dict): read in the graph, so the
// tensor a backend sees is the one inside the subclass it was given.
bool is_inner_tensor(PyObject* fake, PyObject* name) {
  if (!PyObject_HasAttrString((PyObject*)Py_TYPE(fake), "__tensor_flatten__")) return false;
  py::Ref<> flat = check(PyObject_CallMethod(fake, "__tensor_flatten__", nullptr));
  if (!PyTuple_Check(flat.get()) || PyTuple_GET_SIZE(flat.get()) != 2) return false;
  int found = PySequence_Contains(PyTuple_GET_ITEM(flat.get(), 0), name);
  if (found < 0) throw_python_error();
  return found == 1;
}

// An attribute a tensor subclass defines in Python over torch.Tensor's (DTensor.to_local,
// .placements, .redistribute): read as Python reads it, with the tensor as self, and guarded
// where the class holds it, so patching the class recompiles. Null where the class adds
// nothing of its own for `name` (torch.Tensor's attribute is read as for any tensor).
ValuePtr subclass_attribute(Tracer& tracer, const ValuePtr& tensor, PyObject* fake, const std::string& name) {
  PyObject* type = tensor->python_type();
  PyObject* tensor_type = Bridge::get().tensor_type.get();
  if (type == tensor_type) return nullptr;
  py::Ref<> key = check(PyUnicode_FromString(name.c_str()));
  PyObject* own = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(type), key.get());  // borrowed
  if (own == nullptr && is_inner_tensor(fake, key.get()))
    return tracer.record(graph::Op::CallFunction, py::Ref<>::newref(tracer.bridge.getattr.get()),
                         {tensor, ConstantValue::make(std::move(key))}, {});
  if (own == nullptr || own == _PyType_Lookup(reinterpret_cast<PyTypeObject*>(tensor_type), key.get())) return nullptr;
  guards::SourcePtr where = guards::class_attr_source(type, name);
  if (PyFunction_Check(own))
    return std::make_shared<BoundMethodValue>(tracer.wrap_user_function(own, where), tensor);
  if (PyObject_TypeCheck(own, &PyProperty_Type)) {
    py::Ref<> getter = check(PyObject_GetAttrString(own, "fget"));
    if (!PyFunction_Check(getter.get())) return nullptr;
    return tracer.wrap_user_function(getter.get(), guards::attr_source(where, "fget"))->call(tracer, {tensor}, {});
  }
  if (Py_TYPE(own) == &PyStaticMethod_Type || Py_TYPE(own) == &PyClassMethod_Type) {
    py::Ref<> bound = check(PyObject_GetAttrString(type, name.c_str()));
    return tracer.wrap(bound.get(), where);
  }
  if (Py_TYPE(own) == &PyMemberDescr_Type) {
    // A slot (DTensor's _spec): metadata the fake carries as the real tensor does, a constant
    // of the traced computation (an input's is guarded by its flatten metadata). A tensor in a
    // slot (_local_tensor) is read in the graph, as a property is.
    py::Ref<> value = check(PyObject_GetAttrString(fake, name.c_str()));
    if (guards::TensorMeta::get().is_tensor(value.get()))
      return tracer.record(graph::Op::CallFunction, py::Ref<>::newref(tracer.bridge.getattr.get()),
                           {tensor, ConstantValue::make(std::move(key))}, {});
    return tracer.wrap(value.get(), nullptr);
  }
  if (Py_TYPE(own)->tp_descr_get == nullptr) return tracer.wrap(own, where);
  return nullptr;
}

}  // namespace

std::string TensorValue::repr() const {
  std::string name = display_name;
  if (name.empty() && target) {
    if (PyUnicode_Check(target.get())) {
      name = PyUnicode_AsUTF8(target.get());
    } else if (py::Ref<> text = py::Ref<>::steal(PyObject_GetAttrString(target.get(), "__name__"))) {
      name = py_str(text.get());
    } else {
      PyErr_Clear();
    }
  }
  if (name.empty()) name = "node" + std::to_string(node_);
  py::Ref<> text = check(PyObject_CallOneArg(Bridge::get().describe_fake.get(), fake_.get()));
  return "TensorVariable(" + name + ": " + PyUnicode_AsUTF8(text.get()) + ")";
}

PyObject* TensorValue::python_type() const {
  if (type_) return type_.get();
  // A traceable wrapper subclass's fake is an instance of the subclass (a DTensor of fakes), so
  // what an op on one returns is of that class; a plain tensor's fake is a FakeTensor.
  static PyObject* fake_tensor_type =
      check(PyObject_GetAttrString(import_module("torch._subclasses.fake_tensor").get(), "FakeTensor")).release();
  PyObject* fake_type = reinterpret_cast<PyObject*>(Py_TYPE(fake_.get()));
  return fake_type == fake_tensor_type ? Bridge::get().tensor_type.get() : fake_type;
}

PyObject* Tracer::real_tensor_of(const Value* value) const {
  for (const auto& input : inputs)
    if (input.value.get() == value) return input.real.get();
  for (const auto& known : module_tensors)
    if (known.value.get() == value) return known.real.get();
  return nullptr;
}

ValuePtr Tracer::value_of_real_tensor(PyObject* real) const {
  for (const auto& input : inputs)
    if (input.real.get() == real) return input.value;
  for (const auto& known : module_tensors)
    if (known.real.get() == real) return known.value;
  return nullptr;
}

ValuePtr TensorValue::get_attr(Tracer& tracer, const std::string& name) {
  if (name == "numpy") return tensor_numpy_method(shared_from_this());
  if (ValuePtr dispatched = dispatch_attribute_read(tracer, shared_from_this(), name)) return dispatched;
  if (ValuePtr own = subclass_attribute(tracer, shared_from_this(), fake_.get(), name)) return own;
  switch (tensor_attribute_kind(name)) {
    case TensorAttr::Constant:
      return tensor_metadata(tracer, shared_from_this(), name, true, {}, {});
    case TensorAttr::Method:
      return std::make_shared<TensorMethodValue>(shared_from_this(), name);
    case TensorAttr::Property: {
      // x.T, x.mT, x.real: recorded as getattr(x, name).
      ValuePtr attr_name = ConstantValue::make(check(PyUnicode_FromString(name.c_str())));
      return tracer.record(graph::Op::CallFunction, py::Ref<>::newref(tracer.bridge.getattr.get()),
                           {shared_from_this(), attr_name}, {});
    }
    case TensorAttr::Break:
      // Reading it is harmless; calling it is the break (a call site can be split).
      return std::make_shared<TensorMethodValue>(shared_from_this(), name, /*acts_outside_graph=*/true);
    case TensorAttr::Class:
      return tracer.wrap(python_type(), nullptr);
    case TensorAttr::Grad: {
      // An input's .grad is whatever the real tensor holds now (guarded); a tensor made by
      // the graph has none (retain_grad() is a break).
      if (!source()) return ConstantValue::none();
      PyObject* real = tracer.real_tensor_of(this);
      if (real == nullptr) unsupported("tensor_effect", "Tensor.grad of " + repr());
      guards::SubclassDispatchOff undispatched(real);
      py::Ref<> grad = check(PyObject_GetAttrString(real, "grad"));
      guards::SourcePtr grad_source = guards::attr_source(source(), "grad");
      if (grad.get() == Py_None) {
        tracer.guards.add(GuardLog::Kind::None, grad_source, nullptr, 1);
        return ConstantValue::none();
      }
      return tracer.wrap(grad.get(), grad_source);
    }
    case TensorAttr::Missing:
      break;
  }
  unsupported("unsupported_attribute", "Tensor has no attribute '" + name + "'");
}

py::Ref<> TensorValue::as_graph_arg(Tracer& tracer, ArgMode mode) const {
  if (mode == ArgMode::Fake) return fake_.copy();
  return tracer.graph.node(node_).ref.copy();
}

bool TensorValue::truthy(Tracer&) const {
  unsupported("data_dependent_branch", "branching on the value of " + repr());
}

std::optional<Args> TensorValue::unpack(Tracer& tracer) {
  py::Ref<> shape = check(PyObject_GetAttrString(fake_.get(), "shape"));
  if (PyTuple_GET_SIZE(shape.get()) == 0) unsupported("unsupported_iteration", "iterating a 0-d tensor");
  ValuePtr size = specialize(tracer, tensor_size(tracer, shared_from_this(), 0),
                             "iterating over a tensor unrolls its first dimension");
  long length = PyLong_AsLong(size->constant());
  Args items;
  for (long i = 0; i < length; ++i)
    items.push_back(get_item(tracer, ConstantValue::make(check(PyLong_FromLong(i)))));
  return items;
}

ValuePtr TensorValue::get_item(Tracer& tracer, const ValuePtr& key) {
  return tracer.record(graph::Op::CallFunction, py::Ref<>::newref(operator_function("getitem")),
                       {shared_from_this(), key}, {});
}

std::string TensorMethodValue::repr() const { return "GetAttrVariable(" + tensor_->repr() + ", " + name_ + ")"; }

// Deciding anything on the scalar is a data-dependent break (symbolic.cpp).
ValuePtr scalar_output(Tracer& tracer, const ValuePtr& tensor) {
  tracer.shapes->allow_scalar_outputs();
  return tracer.record(graph::Op::CallMethod, check(PyUnicode_FromString("item")), {tensor}, {});
}

namespace {

// `t.tolist()`: nested lists of scalar outputs, one per element (the sizes are specialised).
ValuePtr scalar_list(Tracer& tracer, const ValuePtr& tensor) {
  py::Ref<> shape = check(PyObject_GetAttrString(static_cast<TensorValue&>(*tensor).fake(), "shape"));
  if (PyTuple_GET_SIZE(shape.get()) == 0) return scalar_output(tracer, tensor);
  std::optional<Args> rows = tensor->unpack(tracer);
  Args items;
  for (const ValuePtr& row : *rows) items.push_back(scalar_list(tracer, row));
  return std::make_shared<SequenceValue>(true, std::move(items));
}

}  // namespace

ValuePtr TensorMethodValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if ((name_ == "item" || name_ == "tolist") && args.empty() && kwargs.empty() &&
      tracer.shapes->captures_scalar_outputs())
    return name_ == "item" ? scalar_output(tracer, tensor_) : scalar_list(tracer, tensor_);
  if (name_ == "item" || name_ == "tolist")
    unsupported("data_dependent_op", "Tensor." + name_ + "() reads tensor data");
  if (name_ == "as_subclass" && args.size() == 1 && kwargs.empty()) return as_subclass(tracer, tensor_, args[0]);
  if (acts_outside_graph_) unsupported("tensor_effect", "Tensor." + name_ + "() acts outside the graph");
  if (is_constant_method(name_) && all_constant(args, kwargs))
    if (ValuePtr folded = tensor_metadata(tracer, tensor_, name_, false, args, kwargs)) return folded;
  Args all{tensor_};
  all.insert(all.end(), args.begin(), args.end());
  return tracer.record(graph::Op::CallMethod, check(PyUnicode_FromString(name_.c_str())), all, kwargs);
}

}  // namespace bytegraph::trace
