// The tracer's entry point: trace a function's code as if called with real arguments.
#pragma once

#include <Python.h>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "guards/guard_set.h"
#include "python/ref.h"
#include "codegen/output_plan.h"
#include "codegen/side_effects.h"
#include "trace/break_state.h"
#include "trace/tracer.h"

namespace bytegraph::trace {

struct TraceResult {
  // The captured graph. Placeholders are the tensor inputs (`inputs` names their sources);
  // module parameters and buffers are get_attr nodes on the GraphModule's root.
  py::Ref<> graph_module;
  std::vector<std::string> inputs;
  std::vector<guards::SourcePtr> input_sources;  // the same, as sources
  py::Ref<> example_inputs;  // list of the real tensors, in placeholder order
  // An override of __torch_function__ was traced: the graph runs with subclass dispatch off.
  bool torch_function_inlined = false;
  int op_count = 0;          // call_* nodes in the graph: none means no graph call is needed
  // How to rebuild the return value from the graph's outputs (unset after a break).
  std::optional<codegen::OutputPlan> output;
  // What generated code writes back to objects from outside the frame (with `output`).
  std::vector<codegen::SideEffectPlan> side_effects;
  std::vector<codegen::OutputPlan> new_objects;  // objects made in the trace that outlive it
  // The traced function's code, decoded once for the whole compile (codegen splits it).
  std::shared_ptr<CodeInfo> code;
  std::shared_ptr<guards::GuardSet> guard_set;
  std::vector<std::string> guards;  // guard_set->describe()
  // What guard_set was built from, kept for a warm-start record: the trace's guard log, the
  // tensor inputs the graph treats as distinct, and what the global-state guard compares
  // beyond its defaults (GlobalStateSnapshot's autocast details, no handled exception, the
  // traced states' bits).
  GuardLog guard_log;
  std::vector<guards::SourcePtr> distinct_sources;
  bool compares_autocast_details = false;
  bool compares_no_handled_exception = false;
  unsigned compared_traced_states = 0;
  // Set when tracing stopped early: the graph then holds everything before the breaking
  // instruction, and its outputs are the tensors live on the stack and in locals there.
  std::optional<BreakInfo> graph_break;
  // With graph_break: the stack and live locals there, as plans (trace/break_state.h).
  std::optional<BreakState> break_state;
  // Dynamic shapes: the bridge session while it holds a ShapeEnv whose guards are not added
  // yet (add_shape_guards in symbolic.h, after the backend ran), the sources those guards
  // read, by name, and the fake mode backends must compile in (null for a static trace).
  py::Ref<> shape_session;
  std::unordered_map<std::string, guards::SourcePtr> shape_sources;
  py::Ref<> fake_mode;
};

// Traces `function` (a Python function, bound method or nn.Module) called with `args`
// (tuple) and `kwargs` (dict). Throws Unsupported for breaks outside any instruction (e.g.
// an unsupported return value) and PythonError for invalid arguments.
// `log`, if not null, receives one line per interpreted instruction (see Tracer::log).
// `may_split`: whether the caller takes a graph break as a split (Tracer::may_split).
TraceResult trace_function(PyObject* function, PyObject* args, PyObject* kwargs, PyObject* log = nullptr,
                           bool may_split = false);

// The same for a frame about to run (the frame hook's entry): `function` is a Python
// function and `arguments` its first `count` localsplus slots (positional, keyword-only,
// *args tuple, **kwargs dict, in that order), borrowed; null slots are unbound.
// `shapes`: what may be symbolic (bytegraph._dynamic.ShapePolicy), or null for a static trace.
TraceResult trace_frame(PyObject* function, PyObject* const* arguments, int count, PyObject* log = nullptr,
                        PyObject* shapes = nullptr, bool may_split = false);

}  // namespace bytegraph::trace
