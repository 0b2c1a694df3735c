#include "trace/tracer.h"

#include "bytecode/decode.h"

namespace bytegraph::trace {

using guards::SourcePtr;

// ---- FrameState -------------------------------------------------------------------------

ValuePtr FrameState::pop() {
  if (stack.empty()) throw InternalError("pop from an empty symbolic stack");
  ValuePtr value = std::move(stack.back());
  stack.pop_back();
  return value;
}

ValuePtr& FrameState::top(size_t depth) {
  if (depth >= stack.size()) throw InternalError("symbolic stack underflow");
  return stack[stack.size() - 1 - depth];
}

Args FrameState::pop_n(size_t n) {
  if (n > stack.size()) throw InternalError("symbolic stack underflow");
  Args values(std::make_move_iterator(stack.end() - n), std::make_move_iterator(stack.end()));
  stack.resize(stack.size() - n);
  return values;
}

void FrameState::jump_to(const bytecode::Instruction* target) {
  auto found = code->index.find(target);
  if (found == code->index.end()) throw InternalError("jump target outside the code");
  pc = found->second;
}

// ---- Tracer -----------------------------------------------------------------------------

Tracer::Tracer(py::Ref<> function)
    : bridge(Bridge::get()), graph(py::Ref<>::newref(Bridge::get().node_ref_class.get())),
      function_(std::move(function)) {
  session_ = check(PyObject_CallNoArgs(bridge.session_class.get()));
  run_op_ = check(PyObject_GetAttrString(session_.get(), "run_op"));
  fake_input_ = check(PyObject_GetAttrString(session_.get(), "fake_input"));
}

namespace {

std::string utf8_attr(PyObject* object, const char* name) {
  py::Ref<> value = check(PyObject_GetAttrString(object, name));
  const char* text = PyUnicode_AsUTF8(value.get());
  if (text == nullptr) throw_python_error();
  return text;
}

std::vector<std::string> string_tuple(PyObject* object, const char* name) {
  py::Ref<> tuple = check(PyObject_GetAttrString(object, name));
  std::vector<std::string> out;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple.get()); ++i)
    out.emplace_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(tuple.get(), i)));
  return out;
}

}  // namespace

CodeInfo& Tracer::code_info(PyObject* code) {
  auto found = codes_.find(code);
  if (found != codes_.end()) return *found->second;
  auto info = std::make_unique<CodeInfo>();
  info->code = py::Ref<>::newref(code);
  info->instructions = bytecode::decode(reinterpret_cast<PyCodeObject*>(code)).instructions;
  for (size_t i = 0; i < info->instructions.size(); ++i) info->index[info->instructions[i].get()] = i;
  // localsplus (3.11/3.12): the variables, then cell variables that are not arguments,
  // then free variables. Cell arguments keep their argument slot.
  auto varnames = string_tuple(code, "co_varnames");
  auto cellvars = string_tuple(code, "co_cellvars");
  auto freevars = string_tuple(code, "co_freevars");
  info->nvarnames = static_cast<int>(varnames.size());
  info->nfree = static_cast<int>(freevars.size());
  info->localsplus_names = varnames;
  info->is_cell.assign(varnames.size(), false);
  for (const auto& cell : cellvars) {
    bool found_var = false;
    for (size_t i = 0; i < varnames.size(); ++i)
      if (varnames[i] == cell) info->is_cell[i] = found_var = true;
    if (!found_var) {
      info->localsplus_names.push_back(cell);
      info->is_cell.push_back(true);
    }
  }
  for (const auto& free : freevars) {
    info->localsplus_names.push_back(free);
    info->is_cell.push_back(false);
  }
  auto* raw = reinterpret_cast<PyCodeObject*>(code);
  info->argcount = raw->co_argcount;
  info->posonlyargcount = raw->co_posonlyargcount;
  info->kwonlyargcount = raw->co_kwonlyargcount;
  info->flags = raw->co_flags;
  info->filename = utf8_attr(code, "co_filename");
  info->name = utf8_attr(code, "co_name");
  CodeInfo& result = *info;
  codes_.emplace(code, std::move(info));
  return result;
}

graph::UserLocation Tracer::location() {
  graph::UserLocation where;
  if (frames.empty()) return where;
  const FrameState& frame = *frames.back();
  where.filename = frame.code->filename;
  where.function = frame.code->name;
  if (frame.current != nullptr) where.lineno = frame.current->positions.lineno;
  if (where.lineno > 0) {
    std::string key = where.filename + ":" + std::to_string(where.lineno);
    auto found = source_lines_.find(key);
    if (found == source_lines_.end()) {
      py::Ref<> line = check(PyObject_CallFunction(bridge.linecache_getline.get(), "si",
                                                   where.filename.c_str(), where.lineno));
      const char* text = PyUnicode_AsUTF8(line.get());
      found = source_lines_.emplace(key, text ? text : "").first;
    }
    where.code_line = found->second;
  }
  return where;
}

std::string Tracer::describe_fake(int node) {
  PyObject* fake = fake_of(node);
  if (fake == nullptr) return "?";
  py::Ref<> text = check(PyObject_CallOneArg(bridge.describe_fake.get(), fake));
  return PyUnicode_AsUTF8(text.get());
}

void Tracer::truncate(size_t length) {
  graph.truncate(length);
  while (!inputs.empty() && static_cast<size_t>(inputs.back().node) >= length) inputs.pop_back();
  while (!module_tensors.empty() && static_cast<size_t>(module_tensors.back().node) >= length)
    module_tensors.pop_back();
}

// ---- wrapping real values ---------------------------------------------------------------

namespace {

// Values EQUALS_MATCH can compare; other constants (dtypes, devices, code) are pinned by identity.
bool is_literal(PyObject* value) {
  if (value == Py_None || PyBool_Check(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value) ||
      PyComplex_CheckExact(value) || PyUnicode_CheckExact(value) || PyBytes_CheckExact(value))
    return true;
  if (!PyTuple_CheckExact(value)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); ++i)
    if (!is_literal(PyTuple_GET_ITEM(value, i))) return false;
  return true;
}

bool is_direct(const SourcePtr& source) {
  using K = guards::Source::Kind;
  return source && (source->kind == K::Local || source->kind == K::Global ||
                    source->kind == K::Closure || source->kind == K::Builtin);
}

}  // namespace

ValuePtr Tracer::wrap_tensor(PyObject* real, const SourcePtr& source) {
  for (const auto& input : inputs)
    if (input.real.get() == real) return input.value;  // the same tensor passed twice
  if (!source) unsupported("untracked_tensor", "a tensor with no known source");
  guards.add(GuardLog::Kind::Tensor, source, real);
  py::Ref<> fake = check(PyObject_CallOneArg(fake_input_.get(), real));
  std::string name = graph.unique_name(graph::identifier_from(source->repr()));
  py::Ref<> target = check(PyUnicode_FromString(name.c_str()));
  graph::Node& node = graph.append(graph::Op::Placeholder, std::move(target), nullptr, nullptr,
                                   fake.copy(), {}, name);
  auto value = std::make_shared<TensorValue>(node.index, std::move(fake), source);
  value->display_name = name;
  inputs.push_back(Input{node.index, source->repr(), py::Ref<>::newref(real), value});
  return value;
}

ValuePtr Tracer::wrap_module_tensor(PyObject* real, const SourcePtr& source) {
  for (const auto& known : module_tensors)
    if (known.real.get() == real) return known.value;
  std::string name = graph.add_root_attr(graph::identifier_from(source->repr()), real);
  py::Ref<> fake = check(PyObject_CallOneArg(fake_input_.get(), real));
  py::Ref<> target = check(PyUnicode_FromString(name.c_str()));
  graph::Node& node = graph.append(graph::Op::GetAttr, std::move(target), nullptr, nullptr,
                                   fake.copy(), location(), name);
  auto value = std::make_shared<TensorValue>(node.index, std::move(fake), source);
  value->display_name = name;
  module_tensors.push_back(ModuleTensor{node.index, py::Ref<>::newref(real), value});
  return value;
}

std::shared_ptr<UserFunctionValue> Tracer::wrap_user_function(PyObject* real, const SourcePtr& source) {
  auto* function = reinterpret_cast<PyFunctionObject*>(real);
  py::Ref<> name = check(PyObject_GetAttrString(real, "__name__"));
  auto value = std::make_shared<UserFunctionValue>(py::Ref<>::newref(function->func_code),
                                                   py::Ref<>::newref(function->func_globals),
                                                   PyUnicode_AsUTF8(name.get()), source);
  value->function = py::Ref<>::newref(real);
  // The identity guard pins defaults and closure cells' identity, but not the cells'
  // contents: those get their own guards through their sources.
  if (function->func_defaults) {
    SourcePtr defaults = source ? guards::attr_source(source, "__defaults__") : nullptr;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(function->func_defaults); ++i)
      value->defaults.push_back(wrap(PyTuple_GET_ITEM(function->func_defaults, i),
                                     defaults ? guards::item_source(defaults, check(PyLong_FromSsize_t(i))) : nullptr));
  }
  if (function->func_kwdefaults) {
    SourcePtr defaults = source ? guards::attr_source(source, "__kwdefaults__") : nullptr;
    PyObject *key, *item;
    Py_ssize_t position = 0;
    while (PyDict_Next(function->func_kwdefaults, &position, &key, &item))
      value->kwdefaults.emplace_back(PyUnicode_AsUTF8(key),
                                     wrap(item, defaults ? guards::item_source(defaults, py::Ref<>::newref(key)) : nullptr));
  }
  if (function->func_closure) {
    SourcePtr cells = source ? guards::attr_source(source, "__closure__") : nullptr;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(function->func_closure); ++i) {
      PyObject* cell = PyTuple_GET_ITEM(function->func_closure, i);
      PyObject* contents = PyCell_GET(cell);
      SourcePtr cell_source = cells ? guards::attr_source(guards::item_source(cells, check(PyLong_FromSsize_t(i))), "cell_contents") : nullptr;
      value->closure.push_back(std::make_shared<CellValue>(contents ? wrap(contents, cell_source) : nullptr, false));
    }
  }
  return value;
}

ValuePtr Tracer::wrap(PyObject* real, SourcePtr source) {
  using K = GuardLog::Kind;
  switch (classify(real)) {
    case ObjectKind::Constant:
      guards.add(is_literal(real) ? K::Equals : K::Id, source, real);
      return ConstantValue::make(py::Ref<>::newref(real), source);
    case ObjectKind::Tensor:
      return wrap_tensor(real, source);
    case ObjectKind::Module:
    case ObjectKind::LeafModule: {
      guards.add(K::Id, source, real);
      if (source) {
        py::Ref<> training = check(PyObject_GetAttrString(real, "training"));
        guards.add(K::Equals, guards::attr_source(source, "training"), training.get());
      }
      bool leaf = classify(real) == ObjectKind::LeafModule;
      return std::make_shared<ModuleValue>(py::Ref<>::newref(real), leaf, source);
    }
    case ObjectKind::Tuple:
    case ObjectKind::List: {
      bool is_list = PyList_Check(real);
      guards.add(K::Type, source, (PyObject*)Py_TYPE(real));
      Py_ssize_t n = PySequence_Size(real);
      guards.add(K::Length, source, nullptr, n);
      Args items;
      for (Py_ssize_t i = 0; i < n; ++i) {
        py::Ref<> item = check(PySequence_GetItem(real, i));
        py::Ref<> key = check(PyLong_FromSsize_t(i));
        items.push_back(wrap(item.get(), source ? guards::item_source(source, std::move(key)) : nullptr));
      }
      return std::make_shared<SequenceValue>(is_list, std::move(items), source, false);
    }
    case ObjectKind::Dict: {
      if (!PyDict_CheckExact(real)) unsupported("unsupported_dict", "dict subclass input " + py_repr((PyObject*)Py_TYPE(real)));
      py::Ref<> keys = check(PySequence_Tuple(check(PyDict_Keys(real)).get()));
      guards.add(K::DictKeys, source, keys.get());
      auto dict = std::make_shared<DictValue>(source, false);
      PyObject *key, *item;  // borrowed
      Py_ssize_t position = 0;
      while (PyDict_Next(real, &position, &key, &item)) {
        dict->set_item(key, wrap(item, source ? guards::item_source(source, py::Ref<>::newref(key)) : nullptr));
      }
      return dict;
    }
    case ObjectKind::PythonModule:
      guards.add(K::Id, source, real);
      return std::make_shared<PythonModuleValue>(py::Ref<>::newref(real), source);
    case ObjectKind::UserFunction:
      guards.add(K::Id, source, real);
      return wrap_user_function(real, source);
    case ObjectKind::UserMethod: {
      py::Ref<> function = check(PyObject_GetAttrString(real, "__func__"));
      py::Ref<> self = check(PyObject_GetAttrString(real, "__self__"));
      return std::make_shared<BoundMethodValue>(
          wrap(function.get(), source ? guards::attr_source(source, "__func__") : nullptr),
          wrap(self.get(), source ? guards::attr_source(source, "__self__") : nullptr));
    }
    case ObjectKind::TorchFunction:
      if (is_direct(source)) guards.add(K::Id, source, real);
      return std::make_shared<TorchFunctionValue>(py::Ref<>::newref(real), source);
    case ObjectKind::Builtin:
    case ObjectKind::PureFunction:
      if (is_direct(source)) guards.add(K::Id, source, real);
      return std::make_shared<BuiltinValue>(py::Ref<>::newref(real), source);
    case ObjectKind::GraphBreak:
      return std::make_shared<GraphBreakValue>(source);
    case ObjectKind::GradMode:
      if (is_direct(source)) guards.add(K::Id, source, real);
      return std::make_shared<GradModeValue>(real != bridge.no_grad.get(), true, source);
    case ObjectKind::Class:
    case ObjectKind::Unknown:
      guards.add(K::Id, source, real);
      return std::make_shared<OpaqueValue>(py::Ref<>::newref(real), source);
  }
  throw InternalError("unhandled object kind");
}

// ---- recording operations ---------------------------------------------------------------

py::Ref<> graph_args(Tracer& tracer, const Args& args, ArgMode mode) {
  py::Ref<> tuple = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  for (size_t i = 0; i < args.size(); ++i)
    PyTuple_SET_ITEM(tuple.get(), i, args[i]->as_graph_arg(tracer, mode).release());
  return tuple;
}

py::Ref<> graph_kwargs(Tracer& tracer, const KwArgs& kwargs, ArgMode mode) {
  py::Ref<> dict = check(PyDict_New());
  for (const auto& [name, value] : kwargs)
    check_status(PyDict_SetItemString(dict.get(), name.c_str(), value->as_graph_arg(tracer, mode).get()));
  return dict;
}

namespace {

// Runs an op on fakes; failures become graph breaks with a stable kind.
py::Ref<> run_on_fakes(PyObject* run_op, const char* kind, PyObject* target, PyObject* args, PyObject* kwargs,
                       const Bridge& bridge, const std::string& what) {
  py::Ref<> kind_name = check(PyUnicode_FromString(kind));
  PyObject* result = PyObject_CallFunctionObjArgs(run_op, kind_name.get(), target, args, kwargs, nullptr);
  if (result != nullptr) return py::Ref<>::steal(result);
  bool data_dependent = PyErr_ExceptionMatches(bridge.data_dependent_error.get());
  PythonError error = PythonError::fetch();
  if (data_dependent) unsupported("data_dependent_op", what + ": " + error.what());
  unsupported("fake_op_failed", what + " failed on fake tensors: " + error.what());
}

}  // namespace

ValuePtr Tracer::record(graph::Op op, py::Ref<> target, const Args& args, const KwArgs& kwargs) {
  py::Ref<> fake_args = graph_args(*this, args, ArgMode::Fake);
  py::Ref<> fake_kwargs = graph_kwargs(*this, kwargs, ArgMode::Fake);
  std::string what = op == graph::Op::CallMethod ? "Tensor." + py_str(target.get()) : py_repr(target.get());
  py::Ref<> result = run_on_fakes(run_op_.get(), graph::op_name(op), target.get(), fake_args.get(),
                                  fake_kwargs.get(), bridge, what);
  py::Ref<> node_args = graph_args(*this, args, ArgMode::Graph);
  py::Ref<> node_kwargs = graph_kwargs(*this, kwargs, ArgMode::Graph);
  graph::Node& node = graph.append(op, std::move(target), std::move(node_args), std::move(node_kwargs),
                                   py::Ref<>::newref(result.get()), location());
  return wrap_result(node.index, result.get());
}

ValuePtr Tracer::record_module_call(PyObject* module, const std::string& name, const Args& args,
                                    const KwArgs& kwargs) {
  py::Ref<> fake_args = graph_args(*this, args, ArgMode::Fake);
  py::Ref<> fake_kwargs = graph_kwargs(*this, kwargs, ArgMode::Fake);
  py::Ref<> result = run_on_fakes(run_op_.get(), "call_module", module, fake_args.get(), fake_kwargs.get(),
                                  bridge, py_repr((PyObject*)Py_TYPE(module)));
  std::string attr = graph.add_root_attr(name, module);
  py::Ref<> node_args = graph_args(*this, args, ArgMode::Graph);
  py::Ref<> node_kwargs = graph_kwargs(*this, kwargs, ArgMode::Graph);
  graph::Node& node = graph.append(graph::Op::CallModule, check(PyUnicode_FromString(attr.c_str())),
                                   std::move(node_args), std::move(node_kwargs),
                                   py::Ref<>::newref(result.get()), location());
  return wrap_result(node.index, result.get());
}

namespace {

bool contains_tensor(PyObject* object, PyObject* tensor_type) {
  if (PyObject_TypeCheck(object, (PyTypeObject*)tensor_type)) return true;
  if (PyTuple_Check(object) || PyList_Check(object)) {
    Py_ssize_t n = PySequence_Size(object);
    for (Py_ssize_t i = 0; i < n; ++i) {
      py::Ref<> item = check(PySequence_GetItem(object, i));
      if (contains_tensor(item.get(), tensor_type)) return true;
    }
  }
  return false;
}

}  // namespace

ValuePtr Tracer::wrap_result(int node, PyObject* result) {
  PyObject* tensor_type = bridge.tensor_type.get();
  if (PyObject_TypeCheck(result, (PyTypeObject*)tensor_type)) {
    auto value = std::make_shared<TensorValue>(node, py::Ref<>::newref(result));
    value->target = graph.node(node).target.copy();
    return value;
  }
  if (!contains_tensor(result, tensor_type)) {
    // An op returning None ran for its effect (x[i] = v): keep its node.
    if (result == Py_None) return ConstantValue::none();
    // A result computed from metadata alone (a size, a flag): fold it, no node needed.
    if (classify(result) == ObjectKind::Constant) {
      graph.truncate(static_cast<size_t>(node));
      return ConstantValue::make(py::Ref<>::newref(result));
    }
    unsupported("unsupported_op_result", "an operation returned " + py_repr((PyObject*)Py_TYPE(result)));
  }
  if (!PyTuple_Check(result) && !PyList_Check(result))
    unsupported("unsupported_op_result", "an operation returned " + py_repr((PyObject*)Py_TYPE(result)));
  return wrap_items(node, result);
}

ValuePtr Tracer::wrap_items(int node, PyObject* result) {
  // Multiple outputs: one getitem node per item holding tensors (nested tuples nest them).
  PyObject* tensor_type = bridge.tensor_type.get();
  Args items;
  Py_ssize_t n = PySequence_Size(result);
  for (Py_ssize_t i = 0; i < n; ++i) {
    py::Ref<> item = check(PySequence_GetItem(result, i));
    bool tensor = PyObject_TypeCheck(item.get(), (PyTypeObject*)tensor_type);
    if (tensor || ((PyTuple_Check(item.get()) || PyList_Check(item.get())) && contains_tensor(item.get(), tensor_type))) {
      py::Ref<> index = check(PyLong_FromSsize_t(i));
      py::Ref<> args = check(PyTuple_Pack(2, graph.node(node).ref.get(), index.get()));
      graph::Node& getitem = graph.append(graph::Op::CallFunction, py::Ref<>::newref(bridge.getitem.get()),
                                          std::move(args), nullptr, item.copy(), location());
      if (!tensor) {
        items.push_back(wrap_items(getitem.index, item.get()));
        continue;
      }
      auto value = std::make_shared<TensorValue>(getitem.index, std::move(item));
      value->target = graph.node(node).target.copy();
      items.push_back(std::move(value));
    } else if (classify(item.get()) == ObjectKind::Constant) {
      items.push_back(ConstantValue::make(std::move(item)));
    } else {
      unsupported("unsupported_op_result", "an operation returned a sequence holding " +
                                               py_repr((PyObject*)Py_TYPE(item.get())));
    }
  }
  auto sequence = std::make_shared<SequenceValue>(PyList_Check(result), std::move(items));
  // Named results (torch.return_types.max, namedtuples) keep their field names.
  if (PyTuple_Check(result) && !PyTuple_CheckExact(result)) {
    py::Ref<> fields = py::Ref<>::steal(PyObject_GetAttrString((PyObject*)Py_TYPE(result), "__match_args__"));
    if (fields && PyTuple_Check(fields.get())) sequence->field_names = std::move(fields);
    else PyErr_Clear();
  }
  return sequence;
}

}  // namespace bytegraph::trace
