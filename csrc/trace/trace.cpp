#include "trace/trace.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "python/collector_pause.h"
#include "record/trace_events.h"
#include "trace/interpreter.h"
#include "trace/symbolic.h"
#include "trace/plan_writer.h"
#include "trace/values/autocast.h"
#include "trace/values/context_reentry.h"
#include "trace/values/state_switch.h"

namespace bytegraph::trace {

namespace {

// Makes the root frame: arguments wrapped with local sources, the closure with closure sources.
void setup_root_frame(Tracer& tracer, FrameState& frame, PyObject* function, PyObject* const* arguments, int count) {
  auto* fn = reinterpret_cast<PyFunctionObject*>(function);
  frame.code = &tracer.code_info(fn->func_code);
  frame.globals = py::Ref<>::newref(fn->func_globals);
  PyObject* builtins = PyDict_GetItemString(fn->func_globals, "__builtins__");  // borrowed
  frame.builtins = py::Ref<>::newref(builtins ? builtins : PyEval_GetBuiltins());
  frame.root_globals = true;
  frame.root_builtins = true;
  frame.outermost = true;
  const auto& names = frame.code->localsplus_names;
  frame.locals.resize(names.size());
  // The closure's cells first, one value each and known before anything is wrapped: a
  // function among the arguments or cell contents whose closure shares a cell must see that
  // same cell (and its writes).
  const Py_ssize_t ncells = fn->func_closure ? PyTuple_GET_SIZE(fn->func_closure) : 0;
  const size_t first_free = names.size() - static_cast<size_t>(frame.code->nfree);
  for (Py_ssize_t i = 0; i < ncells; ++i) {
    auto cell = std::make_shared<CellValue>(nullptr, false);
    cell->real = py::Ref<>::newref(PyTuple_GET_ITEM(fn->func_closure, i));
    cell->root_name = names[first_free + i];
    tracer.side_effects.remember(cell->real.get(), cell);
    frame.closure.push_back(std::move(cell));
  }
  for (int slot = 0; slot < count && slot < frame.code->nvarnames; ++slot) {
    PyObject* real = arguments[slot];  // borrowed
    if (real == nullptr) continue;
    frame.locals[slot] = tracer.wrap(real, guards::local_source(names[slot], slot));
  }
  for (Py_ssize_t i = 0; i < ncells; ++i) {
    PyObject* contents = PyCell_GET(PyTuple_GET_ITEM(fn->func_closure, i));
    auto& cell = static_cast<CellValue&>(*frame.closure[i]);
    if (contents) cell.contents = tracer.wrap(contents, guards::closure_source(names[first_free + i], static_cast<int>(i)));
  }
}

// After a break: the tensors the rest of the function may need, stack first, then locals.
std::vector<int> live_tensor_outputs(const FrameState& frame) {
  std::vector<int> outputs;
  auto add = [&](const ValuePtr& value) {
    int node = graph_node_of(value);  // a tensor or a symbolic number
    if (node >= 0 && std::find(outputs.begin(), outputs.end(), node) == outputs.end()) outputs.push_back(node);
  };
  for (const auto& value : frame.stack) if (value) add(value);
  for (const auto& value : frame.locals) if (value) add(value);
  return outputs;
}

}  // namespace

TraceResult trace_function(PyObject* callable, PyObject* args, PyObject* kwargs, PyObject* log, bool may_split) {
  py::Ref<> bridge_module = check(PyImport_ImportModule("bytegraph._bridge"));
  py::Ref<> bound = check(PyObject_CallMethod(bridge_module.get(), "bind_arguments", "OOO", callable, args, kwargs));
  PyObject* function = PyTuple_GET_ITEM(bound.get(), 0);   // borrowed
  PyObject* arguments = PyTuple_GET_ITEM(bound.get(), 1);  // borrowed
  // Lay the bound arguments out as the frame's argument slots.
  PyObject* code = reinterpret_cast<PyFunctionObject*>(function)->func_code;  // borrowed
  py::Ref<> varnames = check(PyObject_GetAttrString(code, "co_varnames"));
  auto* raw = reinterpret_cast<PyCodeObject*>(code);
  int count = raw->co_argcount + raw->co_kwonlyargcount + ((raw->co_flags & CO_VARARGS) ? 1 : 0) +
              ((raw->co_flags & CO_VARKEYWORDS) ? 1 : 0);
  std::vector<PyObject*> slots(static_cast<size_t>(count), nullptr);
  for (int i = 0; i < count; ++i)
    slots[i] = PyDict_GetItem(arguments, PyTuple_GET_ITEM(varnames.get(), i));  // borrowed
  return trace_frame(function, slots.data(), count, log, nullptr, may_split);
}

// BYTEGRAPH_TEST_TRACER=raise|break makes every trace fail (an internal error) or break before
// its first instruction: a switch for checking that the tests notice when nothing is captured.
static void apply_test_switch() {
  const char* mode = std::getenv("BYTEGRAPH_TEST_TRACER");
  if (mode == nullptr || *mode == '\0') return;
  if (std::strcmp(mode, "raise") == 0) throw InternalError("the tracer fails on purpose (BYTEGRAPH_TEST_TRACER=raise)");
  if (std::strcmp(mode, "break") == 0) throw Unsupported("forced_by_test", "every frame breaks (BYTEGRAPH_TEST_TRACER=break)");
  throw InternalError(std::string("BYTEGRAPH_TEST_TRACER must be 'raise' or 'break', not '") + mode + "'");
}

TraceResult trace_frame(PyObject* function, PyObject* const* arguments, int count, PyObject* log, PyObject* shapes,
                        bool may_split) {
  if (!PyFunction_Check(function)) throw PythonError::make(PyExc_TypeError, "trace_frame needs a Python function");
  apply_test_switch();
  py::CollectorPause collector_paused;
  // Grad-mode blocks switch the real mode while tracing; whatever happens, put it back.
  const Bridge& bridge = Bridge::get();
  py::Ref<> grad_enabled = check(PyObject_CallNoArgs(bridge.is_grad_enabled.get()));
  // The state the frame started in, before the trace's own grad-mode blocks switch it.
  guards::GlobalStateSnapshot global_state = guards::GlobalStateSnapshot::now();
  struct RestoreGradMode {
    const Bridge& bridge;
    PyObject* enabled;
    ~RestoreGradMode() {
      PyObject *type, *value, *traceback;
      PyErr_Fetch(&type, &value, &traceback);
      PyObject* result = PyObject_CallOneArg(bridge.set_grad_enabled.get(), enabled);
      if (result == nullptr) PyErr_Clear();
      Py_XDECREF(result);
      PyErr_Restore(type, value, traceback);
    }
  } restore_grad_mode{bridge, grad_enabled.get()};
  Tracer tracer(py::Ref<>::newref(function), shapes == Py_None ? nullptr : shapes);
  // Autocast blocks the trace entered and did not leave (it stopped inside one) are left, and
  // the default dtype its switches changed is put back.
  struct LeaveAutocast {
    Tracer& tracer;
    ~LeaveAutocast() {
      PyObject *type, *value, *traceback;
      PyErr_Fetch(&type, &value, &traceback);
      exit_autocast_modes(tracer, 0);
      try {
        restore_torch_state(tracer, 0);
      } catch (...) {
        PyErr_Clear();
      }
      PyErr_Restore(type, value, traceback);
    }
  } leave_autocast{tracer};
  if (log != nullptr && log != Py_None) tracer.log = py::Ref<>::newref(log);
  tracer.may_split = may_split;
  if (record::Recorder* recorder = record::attached())
    tracer.events = std::make_shared<record::TraceEvents>(*recorder, tracer);
  FrameState frame;
  setup_root_frame(tracer, frame, function, arguments, count);
  BreakInfo break_info;
  ValuePtr result = run_frame(tracer, frame, &break_info);

  TraceResult trace_result;
  trace_result.code = tracer.shared_code_info(reinterpret_cast<PyFunctionObject*>(function)->func_code);
  std::vector<int> outputs;
  if (result) {
    // A list made in the trace that two plans reach (returned and stored in a dict) is planned
    // again as one object made once; each retry shares one more list.
    std::vector<ValuePtr> shared;
    for (bool planned = false; !planned;) {
      try {
        outputs.clear();
        PlanWriter writer(tracer, frame, outputs);
        for (const ValuePtr& list : shared) writer.share_list(list);
        trace_result.output = writer.plan(result);
        trace_result.side_effects = writer.side_effects();
        writer.own_cell_effects(trace_result.side_effects);
        trace_result.new_objects = writer.take_new_objects();
        planned = true;
      } catch (const NotRestorable& error) {
        if (!error.shared_list || shared.size() >= 64) unsupported("unsupported_return", "returning " + error.why);
        shared.push_back(error.shared_list);
      }
    }
  } else {
    const bool introspection = break_info.kind == "frame_introspection";
    trace_result.graph_break = std::move(break_info);
    leave_reenterable_blocks(tracer, frame);
    trace_result.break_state = describe_break_state(tracer, frame, outputs);
    // Resumed in a generated function, the call would see that function's frame instead.
    if (introspection && trace_result.break_state->not_restorable.empty())
      trace_result.break_state->not_restorable = "a call that reads the frame itself (sys._getframe(), dir())";
    if (!trace_result.break_state->not_restorable.empty()) outputs = live_tensor_outputs(frame);
  }
  // Size arithmetic nothing uses (a comparison answered while tracing) is not computed.
  tracer.graph.drop_unused_pure_nodes(outputs);
  // Tensors read but not used by the graph are not inputs. Their guards stay: the trace may
  // have folded their metadata (x.size(), x.dtype, len(x)) into constants it relies on.
  tracer.graph.drop_unused_placeholders(outputs);
  trace_result.graph_module = tracer.graph.materialize(tracer.bridge.build_graph_module.get(), outputs);
  trace_result.example_inputs = check(PyList_New(0));
  for (const auto& input : tracer.inputs) {
    if (tracer.graph.node(static_cast<size_t>(input.node)).dead) continue;
    trace_result.inputs.push_back(input.source);
    trace_result.input_sources.push_back(input.value->source());
    check_status(PyList_Append(trace_result.example_inputs.get(), input.real.get()));
  }
  for (size_t i = 0; i < tracer.graph.size(); ++i) {
    const graph::Node& node = tracer.graph.node(i);
    if (!node.dead && (node.op == graph::Op::CallFunction || node.op == graph::Op::CallMethod ||
                       node.op == graph::Op::CallModule))
      ++trace_result.op_count;
  }
  trace_result.torch_function_inlined = tracer.torch_function_inlined;
  trace_result.guard_set = std::make_shared<guards::GuardSet>();
  tracer.guards.apply(*trace_result.guard_set);
  // The graph treats its tensor inputs as distinct tensors (in-place updates of one are not
  // seen through another): valid while they are.
  std::vector<guards::SourcePtr> tensor_sources;
  for (const auto& input : tracer.inputs)
    if (input.value->is_tensor()) tensor_sources.push_back(input.value->source());
  trace_result.guard_set->add_distinct_objects(tensor_sources);
  // The graph was traced under the global state the frame started with.
  if (tracer.read_autocast_settings) global_state.compare_autocast_settings();
  if (tracer.read_no_handled_exception) global_state.no_handled_exception = true;
  global_state.compared_traced_states |= tracer.read_traced_states;
  trace_result.distinct_sources = std::move(tensor_sources);
  trace_result.compares_autocast_details = global_state.autocast_details;
  trace_result.compares_no_handled_exception = global_state.no_handled_exception;
  trace_result.compared_traced_states = global_state.compared_traced_states;
  trace_result.guard_set->add_global_state_match(std::move(global_state));
  trace_result.guards = trace_result.guard_set->describe();
  if (tracer.shapes->active()) {
    trace_result.shape_session = py::Ref<>::newref(tracer.session());
    trace_result.shape_sources = tracer.shapes->input_sources;
    trace_result.fake_mode = check(PyObject_GetAttrString(tracer.session(), "mode"));
  }
  if (tracer.events) {
    // The viewer sees the shape guards as tracing left them (the backend may add more).
    std::vector<std::string> guards = trace_result.guards;
    for (auto& line : tracer.shapes->guard_preview()) guards.push_back(std::move(line));
    tracer.events->end_trace(trace_result.graph_module.get(), guards);
  }
  trace_result.guard_log = std::move(tracer.guards);
  return trace_result;
}

}  // namespace bytegraph::trace
