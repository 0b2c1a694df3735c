// Symbolic sizes and ints (see trace/symbolic.h).
#include "trace/symbolic.h"

#include "python/import.h"
#include "trace/operators.h"
#include "trace/trace.h"

namespace bytegraph::trace {

namespace {

// What the tracer needs from bytegraph/_bridge_shapes.py, looked up once per process.
struct SymBridge {
  PyTypeObject* sym_int = nullptr;
  PyTypeObject* sym_float = nullptr;
  PyTypeObject* sym_bool = nullptr;
  py::Ref<> describe, sym_int_fn, sym_float_fn, sym_max, sym_min;
  py::Ref<> data_dependent_guard;  // GuardOnDataDependentSymNode

  static const SymBridge& get() {
    static SymBridge* bridge = [] {  // leaked: lives as long as the interpreter
      auto* b = new SymBridge();
      py::Ref<> module = check(PyImport_ImportModule("bytegraph._bridge_shapes"));
      py::Ref<> types = check(PyObject_GetAttrString(module.get(), "SYMBOLIC_TYPES"));
      if (!PyTuple_Check(types.get()) || PyTuple_GET_SIZE(types.get()) != 3)
        throw InternalError("_bridge_shapes.SYMBOLIC_TYPES must be (SymInt, SymFloat, SymBool)");
      // The tuple is kept by the module for the process: its items outlive these pointers.
      b->sym_int = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(types.get(), 0));
      b->sym_float = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(types.get(), 1));
      b->sym_bool = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(types.get(), 2));
      b->describe = check(PyObject_GetAttrString(module.get(), "describe"));
      b->sym_int_fn = check(PyObject_GetAttrString(module.get(), "SYM_INT"));
      b->sym_float_fn = check(PyObject_GetAttrString(module.get(), "SYM_FLOAT"));
      b->sym_max = check(PyObject_GetAttrString(module.get(), "SYM_MAX"));
      b->sym_min = check(PyObject_GetAttrString(module.get(), "SYM_MIN"));
      b->data_dependent_guard = check(PyObject_GetAttrString(module.get(), "GuardOnDataDependentSymNode"));
      return b;
    }();
    return *bridge;
  }
};

py::Ref<> text(const std::string& value) { return check(PyUnicode_FromString(value.c_str())); }

// A failed question to the ShapeEnv: a break when only the data could answer it (a symbol
// read from a tensor by `.item()`, or an input size marked unbacked), else the Python error it is.
[[noreturn]] void data_dependent_failure(const char* kind, const std::string& what, PyObject* number) {
  bool data_dependent = PyErr_ExceptionMatches(Bridge::get().data_dependent_error.get()) ||
                        PyErr_ExceptionMatches(SymBridge::get().data_dependent_guard.get());
  PythonError error = PythonError::fetch();
  if (data_dependent) unsupported(kind, what + py_str(number) + ", which has no value while tracing (read from tensor data, or an unbacked size)");
  throw error;
}

bool is_sym(const ValuePtr& value) { return dynamic_cast<SymNumberValue*>(value.get()) != nullptr; }

// A constant int, float or bool: what arithmetic with a symbolic number accepts.
bool is_number_constant(const ValuePtr& value) {
  if (!value->is_constant()) return false;
  PyObject* object = value->constant();
  return PyLong_Check(object) || PyFloat_Check(object);
}

// Records an operation whose result depends on sizes only, so it can be dropped when
// nothing uses it (a comparison answered at trace time, a size read and not used).
ValuePtr record_pure(Tracer& tracer, graph::Op op, py::Ref<> target, const Args& args, const KwArgs& kwargs) {
  size_t before = tracer.graph.size();
  ValuePtr result = tracer.record(op, std::move(target), args, kwargs);
  for (size_t i = before; i < tracer.graph.size(); ++i) tracer.graph.node(i).pure = true;
  return result;
}

std::string callable_name(PyObject* function) {
  py::Ref<> name = py::Ref<>::steal(PyObject_GetAttrString(function, "__name__"));
  if (!name) {
    PyErr_Clear();
    return py_repr(function);
  }
  return py_str(name.get());
}

// `left == right` for tuples holding symbolic numbers: item by item, as Python compares
// them (each item comparison is a question to the ShapeEnv).
ValuePtr sequence_comparison(Tracer& tracer, PyObject* function, const Args& operands) {
  bool eq = function == operator_function("eq");
  if ((!eq && function != operator_function("ne")) || operands.size() != 2) return nullptr;
  auto* left = dynamic_cast<SequenceValue*>(operands[0].get());
  auto* right = dynamic_cast<SequenceValue*>(operands[1].get());
  if (!(left && has_symbolic(left->items)) && !(right && has_symbolic(right->items))) return nullptr;
  auto left_items = operands[0]->unpack(tracer);
  auto right_items = operands[1]->unpack(tracer);
  if (!left_items || !right_items) return nullptr;
  bool equal = left_items->size() == right_items->size();
  for (size_t i = 0; equal && i < left_items->size(); ++i)
    equal = apply_operator(tracer, operator_function("eq"), {(*left_items)[i], (*right_items)[i]})->truthy(tracer);
  return make_bool(eq ? equal : !equal);
}

}  // namespace

// ---- values -----------------------------------------------------------------------------------

std::string SymNumberValue::repr() const { return "SymNodeVariable(" + py_str(fake_.get()) + ")"; }

PyObject* SymNumberValue::python_type() const {
  const SymBridge& bridge = SymBridge::get();
  PyTypeObject* type = Py_TYPE(fake_.get());
  if (type == bridge.sym_bool) return (PyObject*)&PyBool_Type;
  if (type == bridge.sym_float) return (PyObject*)&PyFloat_Type;
  return (PyObject*)&PyLong_Type;
}

py::Ref<> SymNumberValue::as_graph_arg(Tracer& tracer, ArgMode mode) const {
  if (mode == ArgMode::Fake) return fake_.copy();
  return tracer.graph.node(node_).ref.copy();
}

bool SymNumberValue::truthy(Tracer& tracer) const { return tracer.shapes->guard_bool(fake_.get()); }

std::string SliceValue::repr() const {
  std::string text = "SliceVariable(";
  for (size_t i = 0; i < parts_.size(); ++i) text += (i ? ", " : "") + parts_[i]->repr();
  return text + ")";
}

py::Ref<> SliceValue::as_graph_arg(Tracer& tracer, ArgMode mode) const {
  py::Ref<> start = parts_[0]->as_graph_arg(tracer, mode);
  py::Ref<> stop = parts_[1]->as_graph_arg(tracer, mode);
  py::Ref<> step = parts_.size() > 2 ? parts_[2]->as_graph_arg(tracer, mode) : py::Ref<>::newref(Py_None);
  return check(PySlice_New(start.get(), stop.get(), step.get()));
}

// ---- the trace's symbolic state -----------------------------------------------------------------

SymbolicShapes::SymbolicShapes(Tracer& tracer, PyObject* session) : tracer_(tracer), session_(session) {
  py::Ref<> may = check(PyObject_GetAttrString(session, "may_be_dynamic"));
  may_be_dynamic_ = PyObject_IsTrue(may.get()) == 1;
  py::Ref<> log = check(PyObject_GetAttrString(session, "log_dynamic"));
  log_guards_ = PyObject_IsTrue(log.get()) == 1;
  py::Ref<> scalars = check(PyObject_GetAttrString(session, "capture_scalar_outputs"));
  capture_scalar_outputs_ = PyObject_IsTrue(scalars.get()) == 1;
}

py::Ref<> SymbolicShapes::shapes() const {
  py::Ref<> shapes = check(PyObject_GetAttrString(session_, "shapes"));
  return shapes.get() == Py_None ? py::Ref<>() : std::move(shapes);
}

bool SymbolicShapes::active() const { return static_cast<bool>(shapes()); }

std::vector<std::string> SymbolicShapes::guard_preview() const {
  std::vector<std::string> lines;
  py::Ref<> shapes = this->shapes();
  if (!shapes) return lines;
  py::Ref<> texts = py::Ref<>::steal(PyObject_CallMethod(shapes.get(), "guard_texts", nullptr));
  if (!texts) {  // a preview only: the compile itself reports what went wrong
    PyErr_Clear();
    return lines;
  }
  for (Py_ssize_t i = 0; i < PySequence_Size(texts.get()); ++i)
    lines.push_back("SHAPE_GUARD: " + py_str(check(PySequence_GetItem(texts.get(), i)).get()));
  return lines;
}

std::string SymbolicShapes::where() const {
  graph::UserLocation location = tracer_.location();
  if (location.lineno <= 0) return "<unknown location>";
  std::string line = location.code_line;
  size_t start = line.find_first_not_of(" \t");
  line = start == std::string::npos ? "" : line.substr(start);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return location.filename + ":" + std::to_string(location.lineno) + " in " + location.function +
         (line.empty() ? "" : "\n    " + line);
}

namespace {

// Where a lifted symbol's value is read at run time: x.shape[dim], x.stride()[dim] or
// x.storage_offset().
guards::SourcePtr layout_source(const guards::SourcePtr& tensor, const std::string& kind, PyObject* dim) {
  if (kind == "size") return guards::item_source(guards::attr_source(tensor, "shape"), py::Ref<>::newref(dim));
  if (kind == "stride") return guards::stride_source(tensor, static_cast<int>(PyLong_AsLong(dim)));
  if (kind == "offset") return guards::storage_offset_source(tensor);
  throw InternalError("a lifted symbol of unknown kind " + kind);
}

}  // namespace

SymbolicShapes::TensorInput SymbolicShapes::tensor_input(PyObject* real, const guards::SourcePtr& source) {
  std::string name = source->repr();
  py::Ref<> result = py::Ref<>::steal(PyObject_CallMethod(session_, "wrap_input", "Os", real, name.c_str()));
  if (!result) fake_failed(name);
  TensorInput input;
  input.fake = py::Ref<>::newref(PyTuple_GET_ITEM(result.get(), 0));
  PyObject* info = PyTuple_GET_ITEM(result.get(), 1);  // borrowed
  if (info == Py_None) return input;
  input_sources[name] = source;
  PyObject* lifted = PyTuple_GET_ITEM(info, 0);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(lifted); ++i) {
    PyObject* entry = PyTuple_GET_ITEM(lifted, i);  // (kind, dim, symbol name, SymInt)
    std::string symbol = py_str(PyTuple_GET_ITEM(entry, 2));
    if (auto known = symbols_.find(symbol); known != symbols_.end()) {  // duck sizing: another input defines it
      input.symbol_nodes.push_back(static_cast<const SymNumberValue&>(*known->second).node());
      continue;
    }
    PyObject* symint = PyTuple_GET_ITEM(entry, 3);
    guards::SourcePtr symbol_source = layout_source(source, py_str(PyTuple_GET_ITEM(entry, 0)), PyTuple_GET_ITEM(entry, 1));
    std::string node_name = tracer_.graph.unique_name(symbol);
    graph::Node& node = tracer_.graph.append(graph::Op::Placeholder, text(node_name), nullptr, nullptr,
                                             py::Ref<>::newref(symint), {}, node_name);
    auto value = std::make_shared<SymNumberValue>(node.index, py::Ref<>::newref(symint), symbol_source);
    // Backends get the SymInt itself as the example input, as torch.compile passes it.
    tracer_.inputs.push_back(Tracer::Input{node.index, symbol_source->repr(), py::Ref<>::newref(symint), value});
    symbols_[symbol] = value;
    input.symbol_nodes.push_back(node.index);
  }
  auto int_list = [](PyObject* tuple) {
    std::vector<int> values;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i) values.push_back(static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(tuple, i))));
    return values;
  };
  input.unchecked_sizes = int_list(PyTuple_GET_ITEM(info, 1));
  input.unchecked_strides = int_list(PyTuple_GET_ITEM(info, 2));
  PyObject* inner = PyTuple_GET_ITEM(info, 3);  // ((attribute, unchecked sizes, unchecked strides), ...)
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(inner); ++i) {
    PyObject* entry = PyTuple_GET_ITEM(inner, i);
    std::string attr = py_str(PyTuple_GET_ITEM(entry, 0));
    guards::SourcePtr inner_source = guards::attr_source(source, attr);
    input_sources[inner_source->repr()] = inner_source;  // what the shape guards read
    input.inner.push_back({attr, int_list(PyTuple_GET_ITEM(entry, 1)), int_list(PyTuple_GET_ITEM(entry, 2))});
  }
  return input;
}

ValuePtr SymbolicShapes::int_input(PyObject* real, const guards::SourcePtr& source, bool attribute) {
  if (!may_be_dynamic_ || !source) return nullptr;
  std::string name = source->repr();
  py::Ref<> symint = check(PyObject_CallMethod(session_, "wrap_int", "OsO", real, name.c_str(), attribute ? Py_True : Py_False));
  if (symint.get() == Py_None) return nullptr;
  input_sources[name] = source;
  std::string target_name = tracer_.graph.unique_name(graph::input_name_from(name));
  graph::Node& node = tracer_.graph.append(graph::Op::Placeholder, text(target_name), nullptr, nullptr,
                                           symint.copy(), {}, graph::snake_case(target_name));
  auto value = std::make_shared<SymNumberValue>(node.index, symint.copy(), source);
  tracer_.inputs.push_back(Tracer::Input{node.index, name, symint.copy(), value});
  // Any int will do; its value is the shape guards' business.
  tracer_.guards.add(GuardLog::Kind::Type, source, (PyObject*)&PyLong_Type);
  return value;
}

ValuePtr SymbolicShapes::number(PyObject* fake, const std::function<ValuePtr()>& make_node) {
  py::Ref<> info = check(PyObject_CallOneArg(SymBridge::get().describe.get(), fake));
  PyObject* constant = PyTuple_GET_ITEM(info.get(), 0);
  if (constant != Py_None) return ConstantValue::make(py::Ref<>::newref(constant));
  PyObject* symbol = PyTuple_GET_ITEM(info.get(), 1);
  if (symbol != Py_None) {
    auto found = symbols_.find(py_str(symbol));
    if (found != symbols_.end()) return found->second;
  }
  return make_node();
}

bool SymbolicShapes::guard_bool(PyObject* fake) {
  py::Ref<> shapes = this->shapes();
  if (!shapes) throw InternalError("a symbolic value in a trace without a ShapeEnv");
  std::string location = where();
  py::Ref<> result = py::Ref<>::steal(PyObject_CallMethod(shapes.get(), "guard_bool", "Os", fake, location.c_str()));
  if (!result) data_dependent_failure("data_dependent_branch", "branching on ", fake);
  return result.get() == Py_True;
}

py::Ref<> SymbolicShapes::specialize(PyObject* fake, const std::string& reason) {
  py::Ref<> shapes = this->shapes();
  if (!shapes) throw InternalError("a symbolic value in a trace without a ShapeEnv");
  std::string location = where();
  py::Ref<> value = py::Ref<>::steal(PyObject_CallMethod(shapes.get(), "specialize", "Oss", fake, reason.c_str(), location.c_str()));
  if (!value) data_dependent_failure("data_dependent_op", reason + " needs the value of ", fake);
  return value;
}

bool SymbolicShapes::captures_scalar_outputs() const { return capture_scalar_outputs_ || !tracer_.may_split; }

void SymbolicShapes::allow_scalar_outputs() { check(PyObject_CallMethod(session_, "allow_scalar_outputs", nullptr)); }

void SymbolicShapes::after_op() {
  if (!log_guards_) return;
  py::Ref<> shapes = this->shapes();
  if (!shapes) return;
  std::string location = where();
  check(PyObject_CallMethod(shapes.get(), "log_new_guards", "s", location.c_str()));
}

void SymbolicShapes::truncate(size_t length) {
  for (auto it = symbols_.begin(); it != symbols_.end();) {
    auto* value = static_cast<SymNumberValue*>(it->second.get());
    it = static_cast<size_t>(value->node()) >= length ? symbols_.erase(it) : std::next(it);
  }
}

// ---- helpers --------------------------------------------------------------------------------------

bool is_symbolic_object(PyObject* object) {
  const SymBridge& bridge = SymBridge::get();
  PyTypeObject* type = Py_TYPE(object);
  return type == bridge.sym_int || type == bridge.sym_float || type == bridge.sym_bool;
}

bool contains_symbolic_object(PyObject* object) {
  if (is_symbolic_object(object)) return true;
  if (PyTuple_Check(object) || PyList_Check(object)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(object);
    PyObject** items = PySequence_Fast_ITEMS(object);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (contains_symbolic_object(items[i])) return true;
  }
  return false;
}

bool has_symbolic(const Args& args, const KwArgs& kwargs) {
  for (const auto& arg : args)
    if (is_sym(arg)) return true;
  for (const auto& [name, value] : kwargs)
    if (is_sym(value)) return true;
  return false;
}

int graph_node_of(const ValuePtr& value) {
  if (auto* tensor = dynamic_cast<TensorValue*>(value.get())) return tensor->node();
  if (auto* number = dynamic_cast<SymNumberValue*>(value.get())) return number->node();
  return -1;
}

ValuePtr wrap_symbolic_number(Tracer& tracer, int node, PyObject* result) {
  ValuePtr value = tracer.shapes->number(
      result, [&] { return std::make_shared<SymNumberValue>(node, py::Ref<>::newref(result)); });
  // Known after all (or an input's own symbol): the node is not needed.
  if (graph_node_of(value) != node && static_cast<size_t>(node) + 1 == tracer.graph.size() && !value->is_tensor())
    tracer.graph.truncate(static_cast<size_t>(node));
  return value;
}

ValuePtr tensor_metadata(Tracer& tracer, const ValuePtr& tensor, const std::string& name, bool attribute,
                         const Args& args, const KwArgs& kwargs) {
  PyObject* fake = static_cast<TensorValue&>(*tensor).fake();
  py::Ref<> result;
  if (attribute) {
    result = check(PyObject_GetAttrString(fake, name.c_str()));
  } else {
    py::Ref<> method = check(PyObject_GetAttrString(fake, name.c_str()));
    py::Ref<> positional = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
    for (size_t i = 0; i < args.size(); ++i) PyTuple_SET_ITEM(positional.get(), i, constant_of(args[i]).release());
    py::Ref<> keywords = check(PyDict_New());
    for (const auto& [key, value] : kwargs)
      check_status(PyDict_SetItemString(keywords.get(), key.c_str(), constant_of(value).get()));
    PyObject* called = PyObject_Call(method.get(), positional.get(), keywords.get());
    if (called == nullptr) {
      PythonError error = PythonError::fetch();
      unsupported("constant_fold_raised", "Tensor." + name + " raised " + error.what());
    }
    result = py::Ref<>::steal(called);
    // A metadata method that converts when given arguments (`x.type(torch.half)`) is an op.
    if (PyObject_TypeCheck(result.get(), reinterpret_cast<PyTypeObject*>(Bridge::get().tensor_type.get()))) return nullptr;
  }
  if (!contains_symbolic_object(result.get()))
    return attribute ? ConstantValue::make(std::move(result)) : from_folded(std::move(result));
  PyObject* object = result.get();
  if (Py_TYPE(object) == SymBridge::get().sym_bool) return make_bool(tracer.shapes->guard_bool(object));
  if (is_symbolic_object(object)) {
    // size(d), stride(d), numel(): the node that computes it, unless it is known already.
    return tracer.shapes->number(object, [&] {
      Args all{tensor};
      all.insert(all.end(), args.begin(), args.end());
      return record_pure(tracer, graph::Op::CallMethod, text(name), all, kwargs);
    });
  }
  if (!PyTuple_Check(object))
    unsupported("unsupported_op_result", "Tensor." + name + " returned " + py_repr((PyObject*)Py_TYPE(object)));
  // x.shape, x.size(), x.stride(): a tuple of constants and symbolic numbers.
  const std::string method = name == "stride" ? "stride" : "size";
  Args items;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(object); ++i) {
    PyObject* item = PyTuple_GET_ITEM(object, i);
    if (!is_symbolic_object(item)) {
      items.push_back(ConstantValue::make(py::Ref<>::newref(item)));
      continue;
    }
    items.push_back(tracer.shapes->number(item, [&] {
      ValuePtr dim = ConstantValue::make(check(PyLong_FromSsize_t(i)));
      return record_pure(tracer, graph::Op::CallMethod, text(method), {tensor, dim}, {});
    }));
  }
  auto sequence = std::make_shared<SequenceValue>(false, std::move(items));
  // x.shape and x.size() are a torch.Size, x.stride() a plain tuple.
  if (!PyTuple_CheckExact(object)) sequence->tuple_type = py::Ref<>::newref((PyObject*)Py_TYPE(object));
  return sequence;
}

ValuePtr tensor_size(Tracer& tracer, const ValuePtr& tensor, int dim) {
  return tensor_metadata(tracer, tensor, "size", false, {ConstantValue::make(check(PyLong_FromLong(dim)))}, {});
}

ValuePtr symbolic_operator(Tracer& tracer, PyObject* function, const Args& operands) {
  bool any = false;
  for (const auto& operand : operands) {
    if (operand->is_tensor()) return nullptr;
    any = any || is_sym(operand);
  }
  if (!any) return sequence_comparison(tracer, function, operands);
  for (const auto& operand : operands)
    if (!is_sym(operand) && !is_number_constant(operand)) return nullptr;
  return record_pure(tracer, graph::Op::CallFunction, py::Ref<>::newref(function), operands, {});
}

ValuePtr SymNumberValue::get_attr(Tracer& tracer, const std::string& name) {
  return specialize(tracer, shared_from_this(), "reading ." + name + " of a symbolic number")->get_attr(tracer, name);
}

ValuePtr specialize(Tracer& tracer, const ValuePtr& value, const std::string& reason) {
  auto* number = dynamic_cast<SymNumberValue*>(value.get());
  if (number == nullptr) return value;
  return ConstantValue::make(tracer.shapes->specialize(number->fake(), reason));
}

ValuePtr symbolic_builtin(Tracer& tracer, Value& builtin, PyObject* function, const Args& args, const KwArgs& kwargs) {
  if (!has_symbolic(args, kwargs)) return nullptr;
  auto is = [&](const char* name) { return function == builtin_object(name); };
  // These take symbolic numbers as they are (types, containers, sums of sizes).
  for (const char* name : {"isinstance", "type", "callable", "getattr", "hasattr", "iter", "next", "enumerate",
                           "zip", "list", "tuple", "dict", "len", "super", "print", "sum", "id"})
    if (is(name)) return nullptr;
  const SymBridge& bridge = SymBridge::get();
  bool one = args.size() == 1 && kwargs.empty();
  if (one && is("int")) {
    if (args[0]->python_type() == (PyObject*)&PyLong_Type) return args[0];
    return record_pure(tracer, graph::Op::CallFunction, bridge.sym_int_fn.copy(), args, {});
  }
  if (one && is("float")) return record_pure(tracer, graph::Op::CallFunction, bridge.sym_float_fn.copy(), args, {});
  if (one && is("bool")) return make_bool(args[0]->truthy(tracer));
  if (one && is("abs")) return record_pure(tracer, graph::Op::CallFunction, py::Ref<>::newref(operator_function("abs")), args, {});
  if ((is("min") || is("max")) && kwargs.empty() && !args.empty()) {
    Args items = args;
    if (args.size() == 1) {
      auto unpacked = args[0]->unpack(tracer);
      if (!unpacked || unpacked->empty()) return nullptr;
      items = *unpacked;
    }
    ValuePtr result = items[0];
    for (size_t i = 1; i < items.size(); ++i) {
      if (result->is_constant() && items[i]->is_constant()) {
        result = fold(function, {result, items[i]});
      } else {
        py::Ref<> pick = (is("min") ? bridge.sym_min : bridge.sym_max).copy();
        result = record_pure(tracer, graph::Op::CallFunction, std::move(pick), {result, items[i]}, {});
      }
    }
    return result;
  }
  if (is("slice") && kwargs.empty() && !args.empty() && args.size() <= 3) {
    Args parts = args.size() == 1 ? Args{ConstantValue::none(), args[0]} : args;
    return std::make_shared<SliceValue>(std::move(parts));
  }
  // Anything else needs concrete numbers.
  std::string name = callable_name(function);
  std::string reason = is("range") ? "range() is unrolled, so its bounds must be concrete numbers"
                                   : name + "() is run at trace time on concrete numbers";
  Args concrete;
  for (const auto& arg : args) concrete.push_back(specialize(tracer, arg, reason));
  KwArgs concrete_kwargs;
  for (const auto& [key, value] : kwargs) concrete_kwargs.emplace_back(key, specialize(tracer, value, reason));
  return builtin.call(tracer, concrete, concrete_kwargs);
}

ValuePtr concrete_key(Tracer& tracer, const ValuePtr& key, const std::string& reason) {
  if (auto* slice = dynamic_cast<SliceValue*>(key.get())) {
    Args parts;
    for (const auto& part : slice->parts()) parts.push_back(specialize(tracer, part, reason));
    py::Ref<> start = constant_of(parts[0]), stop = constant_of(parts[1]);
    py::Ref<> step = parts.size() > 2 ? constant_of(parts[2]) : py::Ref<>::newref(Py_None);
    return ConstantValue::make(check(PySlice_New(start.get(), stop.get(), step.get())));
  }
  return specialize(tracer, key, reason);
}

ValuePtr symbolic_slice(const Args& parts) {
  if (!has_symbolic(parts)) return nullptr;
  for (const auto& part : parts)
    if (!is_sym(part) && !(part->is_constant() && (part->constant() == Py_None || PyLong_Check(part->constant()))))
      return nullptr;
  return std::make_shared<SliceValue>(parts);
}

// ---- guards ------------------------------------------------------------------------------------

void add_shape_guards(TraceResult& result) {
  if (!result.shape_session) return;
  py::Ref<> session = std::move(result.shape_session);
  py::Ref<> shapes = check(PyObject_GetAttrString(session.get(), "shapes"));
  if (shapes.get() == Py_None) return;
  py::Ref<> spec = check(PyObject_CallMethod(shapes.get(), "shape_guards", nullptr));
  PyObject* bindings = PyDict_GetItemString(spec.get(), "bindings");  // borrowed
  PyObject* guards = PyDict_GetItemString(spec.get(), "guards");      // borrowed
  if (bindings == nullptr || guards == nullptr || !PyList_Check(bindings) || !PyList_Check(guards))
    throw InternalError("shape_guards() must return {'bindings': [...], 'guards': [...]}");
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(bindings); ++i) {
    PyObject* binding = PyList_GET_ITEM(bindings, i);  // (source name, kind, dim, slot)
    std::string name = py_str(PyTuple_GET_ITEM(binding, 0));
    auto found = result.shape_sources.find(name);
    if (found == result.shape_sources.end()) throw InternalError("a shape guard reads " + name + ", which is no input");
    result.guard_set->add_symbol_binding(found->second, py_str(PyTuple_GET_ITEM(binding, 1)),
                                         static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(binding, 2))),
                                         static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(binding, 3))));
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(guards); ++i) {
    PyObject* guard = PyList_GET_ITEM(guards, i);  // (expression tuple, text)
    result.guard_set->add_shape_guard(PyTuple_GET_ITEM(guard, 0), py_str(PyTuple_GET_ITEM(guard, 1)));
  }
  result.guards = result.guard_set->describe();
}

}  // namespace bytegraph::trace
