// bytegraph._C.trace: the tracer, callable alone from Python for tests and tools.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "binding_gc.h"
#include "bindings.h"
#include "codegen/side_effects.h"
#include "guards/python_handles.h"
#include "python/errors.h"
#include "trace/interpreter.h"
#include "trace/symbolic.h"
#include "trace/trace.h"

namespace bytegraph {

namespace {

nb::object borrow(const py::Ref<>& ref) { return ref ? nb::borrow(ref.get()) : nb::none(); }

// Raises bytegraph._C.Unsupported for a break (python/errors.h: kind, message, hint,
// user_stack) with, after a rollback, `partial`: the TraceResult of everything before it.
[[noreturn]] void raise_unsupported(const Unsupported& error, nb::object partial) {
  py::Ref<> instance = unsupported_exception(error);
  check_status(PyObject_SetAttrString(instance.get(), "partial", partial.ptr()));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(instance.get())), instance.get());
  throw nb::python_error();
}

nb::object break_info(const std::optional<trace::BreakInfo>& info) {
  if (!info) return nb::none();
  nb::dict result;
  result["kind"] = info->kind;
  result["message"] = info->message;
  result["offset"] = info->offset;
  result["opname"] = info->opname;
  result["user_stack"] = nb::cast(info->user_stack);
  result["stack"] = nb::cast(info->stack);
  nb::dict locals;
  for (const auto& [name, repr] : info->locals) locals[nb::cast(name)] = repr;
  result["locals"] = locals;
  return result;
}

// The plans of trace/break_state.h (as read-only views): `stack_plan`, `locals_plan`,
// `cells_plan`, `kw_names`, `restorable` and, when not restorable, `not_restorable` (why).
void add_break_state(nb::object info, const trace::BreakState& state) {
  nb::list stack;
  for (const auto& plan : state.stack) stack.append(plan_view(plan));
  nb::dict locals, cells;
  for (const auto& [name, plan] : state.locals) locals[nb::str(name.c_str())] = plan_view(plan);
  for (const auto& [name, plan] : state.cells) cells[nb::str(name.c_str())] = plan_view(plan);
  info["stack_plan"] = stack;
  info["locals_plan"] = locals;
  info["cells_plan"] = cells;
  info["kw_names"] = borrow(state.kw_names);
  info["restorable"] = state.not_restorable.empty();
  info["not_restorable"] = state.not_restorable;
  info["grad_enabled"] = state.grad_enabled;
}

// Runs one trace and hands its result to Python: a TraceResult, or Unsupported (with the
// partial result) at a break unless `allow_graph_break`.
template <class Trace>
nb::object finish_trace(Trace run, bool allow_graph_break) {
  // An Unsupported thrown outside any instruction (nothing to roll back to) reaches Python
  // through the translator, with no partial result.
  trace::TraceResult result = run();
  if (result.graph_break && !allow_graph_break) {
    // The partial result travels as a plain namespace: exceptions outlive their handlers in
    // tracebacks, and a plain object keeps no C++ state alive.
    nb::object namespace_type = nb::module_::import_("types").attr("SimpleNamespace");
    nb::object partial = namespace_type();
    partial.attr("graph_module") = borrow(result.graph_module);
    partial.attr("inputs") = nb::cast(result.inputs);
    partial.attr("example_inputs") = borrow(result.example_inputs);
    partial.attr("output") = nb::none();
    partial.attr("guards") = nb::cast(result.guards);
    partial.attr("graph_break") = break_info(result.graph_break);
    const trace::BreakInfo& info = *result.graph_break;
    Unsupported error(info.kind, info.message);
    error.set_user_stack(info.user_stack);
    raise_unsupported(error, partial);
  }
  return nb::cast(std::move(result));
}

// What a result owns, for the cycle collector: its graph, example inputs, plans and guards
// hold user objects (functions, modules, globals dicts) that may hold the result in turn.
// The decoded code holds code objects and constants, which cannot form cycles.
void traverse_result(const trace::TraceResult& result, py::Visitor& visit) {
  visit(result.graph_module);
  visit(result.example_inputs);
  if (result.output) codegen::traverse(*result.output, visit);
  for (const auto& effect : result.side_effects) codegen::traverse(effect, visit);
  for (const auto& source : result.input_sources) guards::traverse_source(source, visit);
  if (py::sole_owner(result.guard_set)) result.guard_set->traverse(visit);
  result.guard_log.traverse(visit);
  for (const auto& source : result.distinct_sources) guards::traverse_source(source, visit);
  if (const auto& state = result.break_state) {
    for (const auto& plan : state->stack) codegen::traverse(plan, visit);
    for (const auto& [name, plan] : state->locals) codegen::traverse(plan, visit);
    for (const auto& [name, plan] : state->cells) codegen::traverse(plan, visit);
    for (const auto& effect : state->side_effects) codegen::traverse(effect, visit);
    visit(state->kw_names);
  }
}

void clear_result(trace::TraceResult& result) { result = trace::TraceResult{}; }

const guards::GuardSet& guard_set_of(const trace::TraceResult& result) {
  if (!result.guard_set) throw PythonError::make(PyExc_RuntimeError, "this TraceResult was cleared");
  return *result.guard_set;
}

}  // namespace

void bind_trace(nb::module_& m) {
  nb::module_ trace = m.def_submodule("trace", "The symbolic interpreter");
  nb::class_<trace::TraceResult>(trace, "TraceResult",
                                 nb::type_slots(GcSlots<trace::TraceResult, traverse_result, clear_result>::slots))
      .def_prop_ro("graph_module", [](const trace::TraceResult& r) { return borrow(r.graph_module); })
      .def_prop_ro("inputs", [](const trace::TraceResult& r) { return r.inputs; })
      .def_prop_ro("example_inputs", [](const trace::TraceResult& r) { return borrow(r.example_inputs); })
      .def_prop_ro("output",
                   [](const trace::TraceResult& r) -> nb::object { return r.output ? plan_view(*r.output) : nb::none(); },
                   "How the return value is rebuilt (a read-only view of the plan), or None after a break.")
      .def_prop_ro("op_count", [](const trace::TraceResult& r) { return r.op_count; })
      .def_prop_ro("torch_function_inlined", [](const trace::TraceResult& r) { return r.torch_function_inlined; },
                   "Whether a tensor subclass's __torch_function__ was traced: the graph must run with "
                   "subclass dispatch off (torch._C.DisableTorchFunctionSubclass).")
      .def_prop_ro("guards", [](const trace::TraceResult& r) { return r.guards; })
      .def_prop_ro("input_sources",
                   [](const trace::TraceResult& r) {
                     nb::list sources;
                     for (const auto& source : r.input_sources) sources.append(nb::cast(PySource{source}));
                     return sources;
                   },
                   "The graph's inputs as guards.Source handles, in placeholder order")
      .def_prop_ro("guard_journal",
                   [](const trace::TraceResult& r) {
                     nb::list journal;
                     for (const auto& e : r.guard_log.entries()) {
                       nb::object other = e.other ? nb::cast(PySource{e.other}) : nb::none();
                       nb::object object = e.object ? nb::borrow(e.object.get()) : nb::none();
                       journal.append(nb::make_tuple(trace::GuardLog::kind_name(e.kind), PySource{e.source}, object,
                                                     e.length, other, e.unchecked_sizes, e.unchecked_strides));
                     }
                     return journal;
                   },
                   "The guards as the trace logged them, in order: (kind, source, object, length, other "
                   "source, unchecked sizes, unchecked strides); the distinct tensor inputs and the "
                   "global state are in distinct_sources and global_state_flags.")
      .def_prop_ro("distinct_sources",
                   [](const trace::TraceResult& r) {
                     nb::list sources;
                     for (const auto& source : r.distinct_sources) sources.append(nb::cast(PySource{source}));
                     return sources;
                   })
      .def_prop_ro("global_state_flags",
                   [](const trace::TraceResult& r) {
                     return nb::make_tuple(r.compares_autocast_details, r.compares_no_handled_exception,
                                           r.compared_traced_states);
                   })
      .def("build_guards", [](const trace::TraceResult& r) { return PyGuardTree{guard_set_of(r).build()}; },
           "A new guard tree for everything the trace relied on.")
      .def("add_shape_guards", [](trace::TraceResult& r) { trace::add_shape_guards(r); },
           "Dynamic shapes: adds the ShapeEnv's guards (call after the backend ran, which may add "
           "guards of its own); nothing for a static trace.")
      .def_prop_ro("fake_mode", [](const trace::TraceResult& r) { return borrow(r.fake_mode); },
                   "The FakeTensorMode of a trace with symbolic shapes (backends compile in it), or None.")
      // The GuardSet itself (bytegraph._C.guards.GuardSet), alive as long as this result.
      .def_prop_ro(
          "guard_set",
          [](const trace::TraceResult& r) -> guards::GuardSet& { return const_cast<guards::GuardSet&>(guard_set_of(r)); },
          nb::rv_policy::reference_internal)
      .def_prop_ro("graph_break", [](const trace::TraceResult& r) {
        nb::object info = break_info(r.graph_break);
        if (!info.is_none() && r.break_state) add_break_state(info, *r.break_state);
        return info;
      });

  trace.def(
      "check_stack_effects",
      [](bool on) {
        bool before = trace::stack_effect_checks();
        trace::stack_effect_checks() = on;
        return before;
      },
      nb::arg("on"),
      "Checks each handler's push/pop against the opcode's stack effect from now on (a mismatch "
      "is an internal error); returns the previous setting. Also on with BYTEGRAPH_CHECK_STACK_EFFECTS.");
  trace.def(
      "trace",
      [](nb::object fn, nb::tuple args, nb::dict kwargs, bool allow_graph_break, nb::object log) -> nb::object {
        return finish_trace([&] { return trace::trace_function(fn.ptr(), args.ptr(), kwargs.ptr(), log.ptr(), allow_graph_break); },
                            allow_graph_break);
      },
      nb::arg("fn"), nb::arg("args") = nb::tuple(), nb::arg("kwargs") = nb::dict(),
      nb::arg("allow_graph_break") = false, nb::arg("log").none() = nb::none(),
      "Traces fn(*args, **kwargs) symbolically. Raises bytegraph._C.Unsupported (with .kind, "
      ".message, .hint, .user_stack and .partial, the result up to the break) where tracing stops, "
      "unless allow_graph_break, in which case the result's graph_break describes the stop. "
      "log(line), if given, receives a TRACE line (opcode, argument, symbolic stack) per instruction.");
  trace.def(
      "trace_frame",
      [](nb::object fn, nb::tuple slots, bool allow_graph_break, nb::object log, nb::object shapes) -> nb::object {
        PyObject* tuple = slots.ptr();
        return finish_trace(
            [&] {
              return trace::trace_frame(fn.ptr(), &PyTuple_GET_ITEM(tuple, 0), static_cast<int>(PyTuple_GET_SIZE(tuple)),
                                        log.ptr(), shapes.ptr(), allow_graph_break);
            },
            allow_graph_break);
      },
      nb::arg("fn"), nb::arg("slots"), nb::arg("allow_graph_break") = false, nb::arg("log").none() = nb::none(),
      nb::arg("shapes").none() = nb::none(),
      "Like trace(), for a frame's argument slots in localsplus order (positional, keyword-only, "
      "*args tuple, **kwargs dict), as the frame hook sees them: no re-binding of arguments. "
      "shapes: what may be symbolic (bytegraph._dynamic.ShapePolicy); None traces static shapes.");
}

}  // namespace bytegraph
