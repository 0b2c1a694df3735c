#include "trace/comptime.h"

namespace bytegraph::trace {

namespace {

ComptimeContextFactory context_factory = nullptr;

[[noreturn]] void raise(PyObject* type, const std::string& message) { throw PythonError::make(type, message); }

ValuePtr read_through_cell(const ValuePtr& slot) {
  if (auto* cell = dynamic_cast<CellValue*>(slot.get())) return cell->contents;
  return slot;
}

// A real Python object standing for a symbolic value inside a comptime function's closure
// or defaults: only values known at trace time can be handed over.
py::Ref<> known_object(const ValuePtr& value, const std::string& what) {
  if (py::Ref<> constant = comptime_python_constant(*value)) return constant;
  if (PyObject* real = value->real_object()) return py::Ref<>::newref(real);
  unsupported("comptime", "the comptime function's " + what + " is " + value->repr() +
                              ", which is not known at compile time; read it with ctx.get_local() instead");
}

// The comptime function as a real callable: an existing function object, or one built
// from a function made during the trace (a lambda) with its known defaults and closure.
py::Ref<> real_callable(const Value& fn) {
  if (PyObject* real = fn.real_object(); real && PyCallable_Check(real)) return py::Ref<>::newref(real);
  auto* user = dynamic_cast<const UserFunctionValue*>(&fn);
  if (user == nullptr) unsupported("comptime", "comptime() expects a function, got " + fn.repr());
  py::Ref<> function = check(PyFunction_New(user->code.get(), user->globals.get()));
  if (!user->defaults.empty()) {
    py::Ref<> defaults = check(PyTuple_New(static_cast<Py_ssize_t>(user->defaults.size())));
    for (size_t i = 0; i < user->defaults.size(); ++i)
      PyTuple_SET_ITEM(defaults.get(), i, known_object(user->defaults[i], "default").release());
    check_status(PyFunction_SetDefaults(function.get(), defaults.get()));
  }
  if (!user->kwdefaults.empty()) {
    py::Ref<> kwdefaults = check(PyDict_New());
    for (const auto& [name, value] : user->kwdefaults)
      check_status(PyDict_SetItemString(kwdefaults.get(), name.c_str(), known_object(value, "default").get()));
    check_status(PyFunction_SetKwDefaults(function.get(), kwdefaults.get()));
  }
  if (!user->closure.empty()) {
    py::Ref<> cells = check(PyTuple_New(static_cast<Py_ssize_t>(user->closure.size())));
    for (size_t i = 0; i < user->closure.size(); ++i) {
      // A cell of a real closure (e.g. a list the test collects into) is shared as is.
      auto* symbolic_cell = dynamic_cast<CellValue*>(user->closure[i].get());
      if (symbolic_cell && symbolic_cell->real) {
        PyTuple_SET_ITEM(cells.get(), i, symbolic_cell->real.copy().release());
        continue;
      }
      ValuePtr contents = read_through_cell(user->closure[i]);
      py::Ref<> cell = check(PyCell_New(contents ? known_object(contents, "closure variable").get() : nullptr));
      PyTuple_SET_ITEM(cells.get(), i, cell.release());
    }
    check_status(PyFunction_SetClosure(function.get(), cells.get()));
  }
  return function;
}

}  // namespace

void set_comptime_context_factory(ComptimeContextFactory factory) { context_factory = factory; }

Tracer& ComptimeContext::tracer() const {
  if (tracer_ == nullptr)
    raise(PyExc_RuntimeError, "this ComptimeContext is only valid during the comptime call it was passed to");
  return *tracer_;
}

size_t ComptimeContext::frame_count() const { return tracer().frames.size(); }

const FrameState& ComptimeContext::frame(int stacklevel) const {
  const auto& frames = tracer().frames;
  if (stacklevel < 0 || static_cast<size_t>(stacklevel) >= frames.size())
    raise(PyExc_ValueError, "stacklevel " + std::to_string(stacklevel) + " is out of range: the trace has " +
                                std::to_string(frames.size()) + " frame(s) here");
  return *frames[frames.size() - 1 - static_cast<size_t>(stacklevel)];
}

PyObject* ComptimeContext::code(int stacklevel) const { return frame(stacklevel).code->code.get(); }

int ComptimeContext::offset(int stacklevel) const {
  const FrameState& f = frame(stacklevel);
  return f.current ? f.current->offset : -1;
}

ValuePtr ComptimeContext::local(const std::string& name, int stacklevel) const {
  const FrameState& f = frame(stacklevel);
  const auto& names = f.code->localsplus_names;
  size_t first_free = names.size() - static_cast<size_t>(f.code->nfree);
  for (size_t slot = 0; slot < names.size(); ++slot) {
    if (names[slot] != name) continue;
    ValuePtr value = f.locals[slot];
    // Before COPY_FREE_VARS the free variables are only in the closure.
    if (!value && slot >= first_free && slot - first_free < f.closure.size()) value = f.closure[slot - first_free];
    value = read_through_cell(value);
    if (value) return value;
    raise(PyExc_NameError, "local '" + name + "' of " + f.code->name + " is not bound here");
  }
  raise(PyExc_NameError, f.code->name + " has no local named '" + name + "'");
}

std::vector<std::pair<std::string, ValuePtr>> ComptimeContext::locals(int stacklevel) const {
  const FrameState& f = frame(stacklevel);
  std::vector<std::pair<std::string, ValuePtr>> bound;
  const auto& names = f.code->localsplus_names;
  for (size_t slot = 0; slot < names.size(); ++slot) {
    // Local names are unique in localsplus; unbound ones are skipped.
    ValuePtr value = read_through_cell(f.locals[slot]);
    if (value) bound.emplace_back(names[slot], std::move(value));
  }
  return bound;
}

const Args& ComptimeContext::stack(int stacklevel) const { return frame(stacklevel).stack; }

std::vector<ComptimeFrame> ComptimeContext::backtrace(int stacklevel) const {
  frame(stacklevel);  // validates
  const auto& frames = tracer().frames;
  std::vector<ComptimeFrame> result;
  for (size_t i = 0; i + static_cast<size_t>(stacklevel) < frames.size(); ++i) {
    const FrameState& f = *frames[i];
    ComptimeFrame entry{f.code->filename, f.code->name};
    if (f.current) {
      entry.lineno = f.current->positions.lineno;
      entry.offset = f.current->offset;
    }
    result.push_back(std::move(entry));
  }
  return result;
}

py::Ref<> ComptimeContext::graph_module() const {
  Tracer& t = tracer();
  return t.graph.materialize(t.bridge.build_graph_module.get(), {});
}

int ComptimeContext::graph_position(const Value& value) const {
  auto* tensor = dynamic_cast<const TensorValue*>(&value);
  const graph::Graph& graph = tracer().graph;
  if (tensor == nullptr || static_cast<size_t>(tensor->node()) >= graph.size()) return -1;
  // Materialisation puts live placeholders first, then the other nodes in order.
  int position = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < graph.size(); ++i) {
      const graph::Node& node = graph.node(i);
      if (node.dead || (node.op == graph::Op::Placeholder) != (pass == 0)) continue;
      if (node.index == tensor->node()) return position;
      ++position;
    }
  }
  return -1;
}

std::vector<std::string> ComptimeContext::guards() const {
  guards::GuardSet set;
  tracer().guards.apply(set);
  return set.describe();
}

const char* comptime_value_kind(const Value& value) {
  const Value* v = &value;
  if (auto* seq = dynamic_cast<const SequenceValue*>(v)) return seq->is_list() ? "list" : "tuple";
  // Most specific first; each name matches the class the repr shows.
  if (dynamic_cast<const ConstantValue*>(v)) return "constant";
  if (dynamic_cast<const TensorValue*>(v)) return "tensor";
  if (dynamic_cast<const TensorMethodValue*>(v)) return "tensor_method";
  if (dynamic_cast<const NullValue*>(v)) return "null";
  if (dynamic_cast<const DictValue*>(v)) return "dict";
  if (dynamic_cast<const IteratorValue*>(v)) return "iterator";
  if (dynamic_cast<const CellValue*>(v)) return "cell";
  if (dynamic_cast<const UserFunctionValue*>(v)) return "user_function";
  if (dynamic_cast<const BoundMethodValue*>(v)) return "user_method";
  if (dynamic_cast<const TorchFunctionValue*>(v)) return "torch_function";
  if (dynamic_cast<const BuiltinValue*>(v)) return "builtin";
  if (dynamic_cast<const SuperValue*>(v)) return "super";
  if (dynamic_cast<const GradModeValue*>(v) || dynamic_cast<const GradModeExitValue*>(v)) return "grad_mode";
  if (dynamic_cast<const GraphBreakValue*>(v)) return "graph_break";
  if (dynamic_cast<const ComptimeFunctionValue*>(v)) return "comptime";
  if (dynamic_cast<const ModuleValue*>(v)) return "module";
  if (dynamic_cast<const PythonModuleValue*>(v)) return "python_module";
  if (dynamic_cast<const OpaqueValue*>(v)) return "object";
  return "other";
}

PyObject* comptime_python_type(const Value& value) {
  return value.python_type();
}

py::Ref<> comptime_python_constant(const Value& value) {
  if (value.is_constant()) return py::Ref<>::newref(value.constant());
  if (auto* seq = dynamic_cast<const SequenceValue*>(&value)) {
    py::Ref<> items = check(PyList_New(static_cast<Py_ssize_t>(seq->items.size())));
    for (size_t i = 0; i < seq->items.size(); ++i) {
      py::Ref<> item = comptime_python_constant(*seq->items[i]);
      if (!item) return {};
      PyList_SET_ITEM(items.get(), i, item.release());
    }
    if (seq->is_list()) return items;
    py::Ref<> tuple = check(PyList_AsTuple(items.get()));
    if (!seq->tuple_type) return tuple;
    return check(PyObject_CallOneArg(named_tuple_constructor(seq->tuple_type.get()).get(), tuple.get()));
  }
  if (auto* dict = dynamic_cast<const DictValue*>(&value)) {
    py::Ref<> result = check(PyDict_New());
    for (size_t i = 0; i < dict->keys.size(); ++i) {
      py::Ref<> item = comptime_python_constant(*dict->values[i]);
      if (!item) return {};
      check_status(PyDict_SetItem(result.get(), dict->keys[i].get(), item.get()));
    }
    return result;
  }
  return {};
}

ValuePtr ComptimeFunctionValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  if (args.size() != 1 || !kwargs.empty()) unsupported("comptime", "comptime(fn) takes exactly one argument");
  if (context_factory == nullptr) throw InternalError("comptime: no context factory registered");
  py::Ref<> function = real_callable(*args[0]);
  auto context = std::make_shared<ComptimeContext>(tracer);
  struct Invalidate {
    ComptimeContext& context;
    ~Invalidate() { context.invalidate(); }
  } invalidate{*context};
  py::Ref<> handle = context_factory(context);
  py::Ref<> result = py::Ref<>::steal(PyObject_CallOneArg(function.get(), handle.get()));
  context->invalidate();
  if (const auto& message = context->requested_break()) {
    // ctx.graph_break() raised to unwind the user function; the break replaces that error.
    PyErr_Clear();
    unsupported("comptime_graph_break", *message);
  }
  if (!result) throw ComptimeError(PythonError::fetch());
  return ConstantValue::none();
}

ValuePtr ComptimeFunctionValue::get_attr(Tracer& tracer, const std::string& name) {
  py::Ref<> attribute = py::Ref<>::steal(PyObject_GetAttrString(function_.get(), name.c_str()));
  if (!attribute) {
    PythonError error = PythonError::fetch();
    unsupported("unsupported_attribute", error.what());
  }
  return tracer.wrap(attribute.get(), source() ? guards::attr_source(source(), name) : nullptr);
}

}  // namespace bytegraph::trace
