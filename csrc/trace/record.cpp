// Recording operations: run on fakes, append the node, wrap the result (folding results
// computed from metadata alone, splitting multiple outputs with getitem nodes).
#include "bytecode/handler_kinds.h"
#include "trace/symbolic.h"
#include "trace/tracer.h"
#include "trace/values/torch_function.h"

namespace bytegraph::trace {

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

// Generated code runs the frame's original code when a graph fails at run time
// (codegen/eager_fallback.h), which repeats what the graph did before it failed: harmless for
// the graph's own tensors (and for random numbers: the generators are put back), not for a
// "lasting" op (a write into an input or a module's tensor, running statistics). A graph
// holding one gets no fallback, and its error propagates from the graph call. Two things would then go wrong, so the trace breaks to keep
// them out of such a graph:
// - an except or finally block that eagerly sees the error would not see it: a graph never
//   holds both a lasting op and an op such a block covers;
// - the program's side effects (list appends, attribute and global writes), which generated
//   code makes after the graph returns, would be lost for the ops that failed after them: in
//   a graph with a lasting op every tensor op comes before every side effect.
// The trace breaks at whichever comes second.
// Arithmetic on sizes and ints is computed while tracing (under guards): only tensor ops can
// fail when the graph runs.
static bool touches_tensors(const Args& args, const KwArgs& kwargs) {
  for (const ValuePtr& arg : args)
    if (arg->is_tensor() || dynamic_cast<SequenceValue*>(arg.get())) return true;
  for (const auto& [name, value] : kwargs)
    if (value->is_tensor() || dynamic_cast<SequenceValue*>(value.get())) return true;
  return false;
}

bool Tracer::in_handled_region() const {
  for (const FrameState* frame : frames) {
    if (frame->current != nullptr && frame->current->exception_entry &&
        bytecode::handled_in_frame(frame->code->instructions, frame->code->index, *frame->current))
      return true;
  }
  return false;
}

bool Tracer::writes_outside(PyObject* target, PyObject* fake_args, PyObject* fake_kwargs) {
  py::Ref<> written = check(PyObject_CallFunctionObjArgs(bridge.written_tensors.get(), target, fake_args,
                                                         fake_kwargs, nullptr));
  if (written.get() == Py_None) return false;
  // The inputs and module tensors added since the last write (rollbacks may leave some that
  // no longer are: a spare break, never a missed one).
  if (!outside_tensors_) outside_tensors_ = check(PyList_New(0));
  py::Ref<> added = check(PyList_New(0));
  for (; outside_inputs_seen_ < inputs.size(); ++outside_inputs_seen_)
    check_status(PyList_Append(added.get(), fake_of(inputs[outside_inputs_seen_].node)));
  for (; outside_module_tensors_seen_ < module_tensors.size(); ++outside_module_tensors_seen_)
    check_status(PyList_Append(added.get(), fake_of(module_tensors[outside_module_tensors_seen_].node)));
  py::Ref<> aliases = check(PyObject_CallFunctionObjArgs(bridge.aliases_any.get(), written.get(), added.get(),
                                                         outside_tensors_.get(), nullptr));
  return PyObject_IsTrue(aliases.get()) == 1;
}

bool Tracer::has_side_effects() const {
  return !side_effects.mutated().empty() || !side_effects.global_writes().empty();
}

// `lasting`: why the op about to be recorded outlasts the graph, or null.
void Tracer::keep_failures_recoverable(const std::string& what, const char* lasting) {
  const bool handled = in_handled_region();
  if (lasting && (handled || graph_has_handled_op_))
    unsupported("lasting_op_in_try",
                what + " " + lasting + ", where an except or finally block sees the graph's errors");
  if (handled && graph_cannot_rerun_)
    unsupported("lasting_op_in_try", what + " is covered by an except or finally block, and the graph already "
                                            "holds an op whose effect outlasts it");
  if (may_split && has_side_effects()) {
    if (lasting)
      unsupported("lasting_op_after_side_effect",
                  what + " " + lasting + ", after a side effect the graph makes when it returns");
    if (graph_cannot_rerun_)
      unsupported("lasting_op_after_side_effect", what + " comes after a side effect, in a graph holding an op whose "
                                                         "effect outlasts it");
  }
  graph_has_handled_op_ = graph_has_handled_op_ || handled;
  graph_cannot_rerun_ = graph_cannot_rerun_ || lasting != nullptr;
}

const char* Tracer::lasting_effect(PyObject* target, PyObject* fake_args, PyObject* fake_kwargs) {
  if (writes_outside(target, fake_args, fake_kwargs)) return "writes into a tensor from outside the graph";
  py::Ref<> leaves = check(PyObject_CallFunctionObjArgs(bridge.op_leaves_a_trace.get(), target, fake_args,
                                                        fake_kwargs, nullptr));
  return PyObject_IsTrue(leaves.get()) == 1 ? "updates running statistics it is passed" : nullptr;
}

ValuePtr Tracer::record(graph::Op op, py::Ref<> target, const Args& args, const KwArgs& kwargs) {
  if (ValuePtr dispatched = dispatch_torch_function(*this, op, target.get(), args, kwargs)) return dispatched;
  py::Ref<> fake_args = graph_args(*this, args, ArgMode::Fake);
  py::Ref<> fake_kwargs = graph_kwargs(*this, kwargs, ArgMode::Fake);
  std::string what = op == graph::Op::CallMethod ? "Tensor." + py_str(target.get()) : py_repr(target.get());
  if (touches_tensors(args, kwargs))
    keep_failures_recoverable(what, lasting_effect(target.get(), fake_args.get(), fake_kwargs.get()));
  py::Ref<> result = run_on_fakes(run_op_.get(), graph::op_name(op), target.get(), fake_args.get(),
                                  fake_kwargs.get(), bridge, what);
  shapes->after_op();
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
  py::Ref<> leaves = check(PyObject_CallOneArg(bridge.module_leaves_a_trace.get(), module));
  keep_failures_recoverable(py_repr((PyObject*)Py_TYPE(module)),
                            PyObject_IsTrue(leaves.get()) == 1 ? "updates its buffers or writes in place" : nullptr);
  py::Ref<> result = run_on_fakes(run_op_.get(), "call_module", module, fake_args.get(), fake_kwargs.get(),
                                  bridge, py_repr((PyObject*)Py_TYPE(module)));
  shapes->after_op();
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
  if (is_symbolic_object(result)) return wrap_symbolic_number(*this, node, result);
  if (!contains_tensor(result, tensor_type) && !contains_symbolic_object(result)) {
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
    bool symbolic = is_symbolic_object(item.get());
    bool nested = (PyTuple_Check(item.get()) || PyList_Check(item.get())) &&
                  (contains_tensor(item.get(), tensor_type) || contains_symbolic_object(item.get()));
    if (tensor || symbolic || nested) {
      py::Ref<> index = check(PyLong_FromSsize_t(i));
      py::Ref<> args = check(PyTuple_Pack(2, graph.node(node).ref.get(), index.get()));
      graph::Node& getitem = graph.append(graph::Op::CallFunction, py::Ref<>::newref(bridge.getitem.get()),
                                          std::move(args), nullptr, item.copy(), location());
      if (symbolic) {
        items.push_back(wrap_symbolic_number(*this, getitem.index, item.get()));
        continue;
      }
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
  // Named results (torch.return_types.max, namedtuples) keep their type.
  if (PyTuple_Check(result) && !PyTuple_CheckExact(result)) sequence->tuple_type = py::Ref<>::newref((PyObject*)Py_TYPE(result));
  return sequence;
}

}  // namespace bytegraph::trace
