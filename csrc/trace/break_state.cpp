#include "trace/break_state.h"

#include <algorithm>
#include <unordered_set>

#include "bytecode/liveness.h"
#include "trace/plan_writer.h"

namespace bytegraph::trace {

namespace {

// The locals the rest of the frame may read. Zero-argument super() reads the first argument
// (and the __class__ cell) without naming it: code that has __class__ keeps it live.
std::unordered_set<std::string> live_locals(const FrameState& frame) {
  std::vector<std::string> live = bytecode::live_locals_at(frame.code->instructions, frame.pc);
  std::unordered_set<std::string> live_set(live.begin(), live.end());
  const auto& names = frame.code->localsplus_names;
  const size_t nfree = std::min(names.size(), static_cast<size_t>(frame.code->nfree));
  if (frame.code->argcount > 0 && std::find(names.end() - nfree, names.end(), "__class__") != names.end())
    live_set.insert(names[0]);
  return live_set;
}

codegen::OutputPlan plan_or_explain(PlanWriter& writer, const ValuePtr& value, const std::string& what) {
  try {
    return writer.plan(value);
  } catch (const NotRestorable& error) {
    throw NotRestorable{what + " " + error.why};
  }
}

}  // namespace

BreakState describe_break_state(Tracer& tracer, const FrameState& frame, std::vector<int>& outputs) {
  BreakState state;
  if (frame.handlers_open > 0) {
    // Generated code resumes in the original's code, never inside an except or finally block
    // (the exception it handles is gone): the frame runs eagerly.
    state.not_restorable = "a break inside an except or finally block";
    return state;
  }
  if (frame.kw_names) state.kw_names = frame.kw_names.copy();
  py::Ref<> enabled = check(PyObject_CallNoArgs(tracer.bridge.is_grad_enabled.get()));
  state.grad_enabled = enabled.get() == Py_True;
  // Restored when some value has no plan, so the graph's outputs stay those of the stop.
  const std::vector<int> kept_outputs = outputs;
  try {
    PlanWriter writer(tracer, frame, outputs);
    for (const ValuePtr& value : frame.stack) {
      auto* iterator = dynamic_cast<IteratorValue*>(value.get());
      if (iterator && iterator->live_list() && !iterator->enumerate_start() && !iterator->live_list()->source())
        writer.share_list(iterator->live_list());
    }
    std::unordered_set<std::string> live = live_locals(frame);
    const auto& names = frame.code->localsplus_names;
    // Cell and free variables are not passed on: the resume function gets the cells themselves
    // in its closure. What the trace stored in this frame's cells is written back.
    const size_t fast_locals = std::min(names.size(), static_cast<size_t>(frame.code->nvarnames));
    const size_t first_free = frame.locals.size() - std::min(frame.locals.size(), static_cast<size_t>(frame.code->nfree));
    for (size_t slot = 0; slot < first_free && slot < names.size(); ++slot) {
      if (slot >= frame.code->is_cell.size() || !frame.code->is_cell[slot]) continue;
      auto* cell = dynamic_cast<CellValue*>(frame.locals[slot].get());
      if (cell == nullptr || !cell->contents) continue;  // not made yet, or empty
      state.cells.emplace_back(names[slot], plan_or_explain(writer, cell->contents, "cell variable '" + names[slot] + "' holds"));
    }
    for (size_t slot = 0; slot < frame.locals.size() && slot < fast_locals; ++slot) {
      const ValuePtr& value = frame.locals[slot];
      if (!value || !live.count(names[slot])) continue;
      if (slot < frame.code->is_cell.size() && frame.code->is_cell[slot]) continue;
      state.locals.emplace_back(names[slot], plan_or_explain(writer, value, "local '" + names[slot] + "' holds"));
    }
    for (size_t i = 0; i < frame.stack.size(); ++i)
      state.stack.push_back(plan_or_explain(writer, frame.stack[i], "stack item " + std::to_string(i) + " is"));
    state.side_effects = writer.side_effects();
    state.new_objects = writer.take_new_objects();
  } catch (const NotRestorable& error) {
    state.not_restorable = "cannot rebuild " + error.why;
    state.stack.clear();
    state.locals.clear();
    state.cells.clear();
    state.side_effects.clear();
    state.new_objects.clear();
    outputs = kept_outputs;
  }
  return state;
}

}  // namespace bytegraph::trace
