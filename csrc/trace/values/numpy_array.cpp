// NumPy arrays of the trace: see values/numpy_array.h.
#include "trace/values/numpy_array.h"

#include <cstring>
#include <unordered_map>

#include "trace/operators.h"
#include "trace/plan_writer.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

// bytegraph._numpy_interop's `name`, imported on first use (fake tensors never load NumPy's
// mirror for programs that do not use it).
PyObject* interop(const char* name) {
  static PyObject* module = check(PyImport_ImportModule("bytegraph._numpy_interop")).release();  // kept
  return check(PyObject_GetAttrString(module, name)).release();  // kept for the process by the caller's static
}

PyObject* ndarray_type() {
  static PyObject* type = [] {
    py::Ref<> numpy = check(PyImport_ImportModule("numpy"));
    return check(PyObject_GetAttrString(numpy.get(), "ndarray")).release();
  }();
  return type;
}

py::Ref<> call_interop(const char* name, PyObject* argument) {
  static std::unordered_map<std::string, PyObject*> functions;
  PyObject*& function = functions[name];
  if (function == nullptr) function = interop(name);
  return check(PyObject_CallOneArg(function, argument));
}

bool holds_array(const ValuePtr& value) {
  if (dynamic_cast<NumpyArrayValue*>(value.get())) return true;
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get()))
    for (const ValuePtr& item : seq->items)
      if (holds_array(item)) return true;
  return false;
}

// What a node receives for a value: an array's tensor (inside lists and tuples too).
ValuePtr graph_operand(const ValuePtr& value) {
  if (auto* array = dynamic_cast<NumpyArrayValue*>(value.get())) return array->tensor();
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get()); seq && holds_array(value)) {
    Args items;
    for (const ValuePtr& item : seq->items) items.push_back(graph_operand(item));
    return std::make_shared<SequenceValue>(seq->is_list(), std::move(items));
  }
  return value;
}

// What NumPy code sees of a node's result: tensors are arrays.
ValuePtr as_arrays(const ValuePtr& value) {
  if (value->is_tensor()) return std::make_shared<NumpyArrayValue>(value);
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get())) {
    Args items;
    for (const ValuePtr& item : seq->items) items.push_back(as_arrays(item));
    return std::make_shared<SequenceValue>(seq->is_list(), std::move(items));
  }
  return value;
}

ValuePtr record_numpy(Tracer& tracer, py::Ref<> target, const Args& args, const KwArgs& kwargs) {
  Args operands;
  for (const ValuePtr& arg : args) operands.push_back(graph_operand(arg));
  KwArgs named;
  for (const auto& [name, value] : kwargs) named.emplace_back(name, graph_operand(value));
  return as_arrays(tracer.record(graph::Op::CallFunction, std::move(target), operands, named));
}

py::Ref<> name_object(const std::string& name) { return check(PyUnicode_FromString(name.c_str())); }

// `array.name(...)`.
class NumpyMethodValue : public Value {
 public:
  NumpyMethodValue(ValuePtr array, py::Ref<> target) : array_(std::move(array)), target_(std::move(target)) {}
  std::string repr() const override { return "NumpyMethodVariable(" + py_repr(target_.get()) + ")"; }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    Args all{array_};
    all.insert(all.end(), args.begin(), args.end());
    return record_numpy(tracer, target_.copy(), all, kwargs);
  }

 private:
  ValuePtr array_;
  py::Ref<> target_;
};

// `x.numpy` before it is called.
class TensorNumpyMethodValue : public Value {
 public:
  explicit TensorNumpyMethodValue(ValuePtr tensor) : tensor_(std::move(tensor)) {}
  std::string repr() const override { return "TensorNumpyMethod(" + tensor_->repr() + ")"; }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    for (const auto& [name, value] : kwargs)
      if (name != "force" || !value->is_constant() || value->constant() != Py_False)
        unsupported("unsupported_call", "Tensor.numpy(" + name + "=" + value->repr() + ")");
    if (!args.empty()) raise_error("bad_call", PyExc_TypeError, "numpy() takes no positional arguments");
    return tensor_to_numpy(tracer, tensor_);
  }

 private:
  ValuePtr tensor_;
};

// One of NumPy's functions: on arrays of the trace, a node computing it with torch._numpy.
class NumpyFunctionValue : public Value {
 public:
  NumpyFunctionValue(py::Ref<> function, guards::SourcePtr source) : Value(std::move(source)), function_(std::move(function)) {}
  std::string repr() const override { return "NumpyFunctionVariable(" + py_repr(function_.get()) + ")"; }
  PyObject* python_type() const override { return (PyObject*)Py_TYPE(function_.get()); }
  PyObject* real_object() const override { return function_.get(); }
  bool truthy(Tracer&) const override { return true; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    bool arrays = false;
    for (const ValuePtr& arg : args) arrays = arrays || holds_array(arg) || arg->is_tensor();
    for (const auto& [name, value] : kwargs) arrays = arrays || holds_array(value) || value->is_tensor();
    if (!arrays) {
      // A ufunc (np.sqrt) on constants is computed now; other functions may act (np.seterr).
      if (all_constant(args, kwargs) && std::strcmp(Py_TYPE(function_.get())->tp_name, "numpy.ufunc") == 0)
        return fold(function_.get(), args, kwargs);
      unsupported("unsupported_call", "calling " + repr() + " on " + (args.empty() ? std::string("these arguments") : args[0]->repr()));
    }
    py::Ref<> target = call_interop("function_target", function_.get());
    if (target.get() == Py_None) unsupported("unsupported_call", repr() + " has no torch._numpy counterpart");
    return record_numpy(tracer, std::move(target), args, kwargs);
  }

 private:
  py::Ref<> function_;
};

}  // namespace

PyObject* NumpyArrayValue::python_type() const { return ndarray_type(); }

ValuePtr NumpyArrayValue::get_attr(Tracer& tracer, const std::string& name) {
  // Metadata NumPy computes from the tensor's: constants of the trace (or its symbolic sizes).
  if (name == "shape") {
    auto size = tensor_->get_attr(tracer, "shape")->unpack(tracer);
    return std::make_shared<SequenceValue>(false, size ? *size : Args{});
  }
  if (name == "ndim") return tensor_->get_attr(tracer, "ndim");
  if (name == "size") return tensor_->get_attr(tracer, "numel")->call(tracer, {}, {});
  if (name == "itemsize") return tensor_->get_attr(tracer, "element_size")->call(tracer, {}, {});
  if (name == "strides") {
    ValuePtr itemsize = get_attr(tracer, "itemsize");
    auto strides = tensor_->get_attr(tracer, "stride")->call(tracer, {}, {})->unpack(tracer);
    Args bytes;
    for (const ValuePtr& stride : strides ? *strides : Args{})
      bytes.push_back(apply_operator(tracer, operator_function("mul"), {stride, itemsize}));
    return std::make_shared<SequenceValue>(false, std::move(bytes));
  }
  if (name == "dtype") {
    py::Ref<> dtype = check(PyObject_GetAttrString(static_cast<TensorValue&>(*tensor_).fake(), "dtype"));
    return ConstantValue::make(call_interop("dtype_of", dtype.get()));
  }
  py::Ref<> key = name_object(name);
  py::Ref<> attribute = call_interop("attribute_target", key.get());
  if (attribute.get() != Py_None) return record_numpy(tracer, std::move(attribute), {shared_from_this()}, {});
  py::Ref<> method = call_interop("method_target", key.get());
  if (method.get() != Py_None) return std::make_shared<NumpyMethodValue>(shared_from_this(), std::move(method));
  unsupported("unsupported_attribute", repr() + "." + name + " (torch._numpy has no such attribute)");
}

ValuePtr NumpyArrayValue::get_item(Tracer& tracer, const ValuePtr& key) {
  return numpy_operator(tracer, operator_function("getitem"), {shared_from_this(), key});
}

std::optional<Args> NumpyArrayValue::unpack(Tracer& tracer) {
  auto rows = tensor_->unpack(tracer);
  if (!rows) return std::nullopt;
  Args arrays;
  for (const ValuePtr& row : *rows) arrays.push_back(as_arrays(row));
  return arrays;
}

ValuePtr tensor_numpy_method(ValuePtr tensor) { return std::make_shared<TensorNumpyMethodValue>(std::move(tensor)); }

ValuePtr tensor_to_numpy(Tracer&, const ValuePtr& tensor) {
  auto* value = dynamic_cast<TensorValue*>(tensor.get());
  if (value == nullptr) unsupported("unsupported_call", "numpy() of " + tensor->repr());
  py::Ref<> requires_grad = check(PyObject_GetAttrString(value->fake(), "requires_grad"));
  if (requires_grad.get() == Py_True)
    raise_error("python_error", PyExc_RuntimeError,
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
  py::Ref<> device = check(PyObject_GetAttrString(value->fake(), "device"));
  py::Ref<> device_type = check(PyObject_GetAttrString(device.get(), "type"));
  if (py_str(device_type.get()) != "cpu")
    unsupported("tensor_effect", "Tensor.numpy() of a tensor on " + py_str(device_type.get()) + " copies it to the host");
  return std::make_shared<NumpyArrayValue>(tensor);
}

ValuePtr numpy_operator(Tracer& tracer, PyObject* function, const Args& operands) {
  bool arrays = false;
  for (const ValuePtr& operand : operands) arrays = arrays || dynamic_cast<NumpyArrayValue*>(operand.get());
  if (!arrays) return nullptr;
  return record_numpy(tracer, call_interop("operator_target", function), operands, {});
}

ValuePtr wrap_numpy_function(Tracer& tracer, PyObject* real, const guards::SourcePtr& source) {
  tracer.guards.add(GuardLog::Kind::Id, source, real);
  return std::make_shared<NumpyFunctionValue>(py::Ref<>::newref(real), source);
}

ValuePtr tensor_of_array(PyObject* function, const Args& args, const KwArgs& kwargs) {
  if (args.size() != 1 || !kwargs.empty()) return nullptr;
  auto* array = dynamic_cast<NumpyArrayValue*>(args[0].get());
  if (array == nullptr) return nullptr;
  static PyObject* converters = interop("from_numpy_functions");
  py::Ref<> known = check(PyObject_CallNoArgs(converters));
  int found = PySequence_Contains(known.get(), function);
  check_status(found);
  return found == 1 ? array->tensor() : nullptr;
}

PyObject* to_numpy_function() {
  static PyObject* function = interop("to_numpy");
  return function;
}

std::optional<codegen::OutputPlan> NumpyArrayValue::remake(PlanWriter& writer) {
  return writer.call(to_numpy_function(), {tensor_});
}

}  // namespace bytegraph::trace
