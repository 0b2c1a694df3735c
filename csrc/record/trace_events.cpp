#include "record/trace_events.h"

#include "record/notes.h"
#include "trace/interpreter.h"

namespace bytegraph::record {

namespace {

// BINARY_OP's argument names an operator; `dis` keeps the table (3.11+), read once.
std::string binary_operator(int arg) {
  // Deliberately never released: a static Ref would decref after the interpreter is gone.
  static PyObject* table = [] {
    py::Ref<> dis = check(PyImport_ImportModule("dis"));
    PyObject* ops = PyObject_GetAttrString(dis.get(), "_nb_ops");
    if (ops == nullptr) PyErr_Clear();
    return ops;
  }();
  if (table == nullptr || !PySequence_Check(table) || arg < 0 || arg >= PySequence_Size(table))
    return std::to_string(arg);
  py::Ref<> entry = check(PySequence_GetItem(table, arg));
  py::Ref<> symbol = check(PySequence_GetItem(entry.get(), 1));
  return trace::py_str(symbol.get());
}

// What `dis` shows as the argument, near enough; the Python side prefers dis's own text.
std::string argrepr_of(const bytecode::Instruction& inst) {
  if (inst.target != nullptr && inst.target->offset >= 0) return "to " + std::to_string(inst.target->offset);
  if (!inst.argval && std::string(trace::opcode_name(inst.opcode)) == "BINARY_OP") return binary_operator(inst.arg);
  if (inst.argval) {
    if (PyUnicode_Check(inst.argval.get()) && std::string(trace::opcode_name(inst.opcode)) != "LOAD_CONST")
      return trace::py_str(inst.argval.get());
    return trace::py_repr(inst.argval.get());
  }
  return inst.arg >= 0 ? std::to_string(inst.arg) : "";
}

std::string repr_of(const trace::ValuePtr& value) { return value ? value->repr() : "NULL"; }

}  // namespace

TraceEvents::TraceEvents(Recorder& recorder, trace::Tracer& tracer)
    : recorder_(recorder), tracer_(tracer), rows_(tracer.bridge.node_ref_class.get()) {}

void TraceEvents::begin_frame(const trace::FrameState& frame) {
  FrameEvent event;
  event.code = frame.code->code.get();
  event.name = frame.code->name;
  if (!open_.empty()) {
    event.parent = open_.back().id;
    open_.back().inlined = frame.code->name;
  }
  open_.push_back(OpenFrame{recorder_.begin_frame(event), {}});
}

void TraceEvents::end_frame() {
  if (open_.empty()) return;
  int id = open_.back().id;
  open_.pop_back();
  recorder_.end_frame(id);
}

std::vector<std::string> TraceEvents::new_guards() {
  std::vector<std::string> added;
  size_t count = tracer_.guards.size();
  if (count > guards_seen_) {
    std::vector<std::string> lines = tracer_.guards.describe();
    for (size_t i = guards_seen_; i < lines.size(); ++i) added.push_back(std::move(lines[i]));
  }
  guards_seen_ = count;  // a rollback may also have dropped some
  return added;
}

StepEvent TraceEvents::snapshot(const trace::FrameState& frame, const bytecode::Instruction& inst) {
  StepEvent event;
  event.offset = inst.offset;
  event.opname = trace::opcode_name(inst.opcode);
  event.argrepr = argrepr_of(inst);
  event.line = inst.positions.lineno;
  for (const auto& value : frame.stack) event.stack.push_back(repr_of(value));
  for (size_t i = 0; i < frame.locals.size(); ++i)
    if (frame.locals[i]) event.locals.emplace_back(frame.code->localsplus_names[i], frame.locals[i]->repr());
  event.graph_kept = rows_.update(tracer_.graph);
  const auto& rows = rows_.rows();
  event.graph_added.assign(rows.begin() + static_cast<std::ptrdiff_t>(event.graph_kept), rows.end());
  return event;
}

void TraceEvents::step(const trace::FrameState& frame, const bytecode::Instruction& inst) {
  if (open_.empty()) return;
  StepEvent event = snapshot(frame, inst);
  NoteFacts facts;
  facts.opcode = inst.opcode;
  facts.opname = event.opname;
  facts.argrepr = event.argrepr;
  if (!event.stack.empty()) facts.top = event.stack.back();
  if (frame.result) facts.result = frame.result->repr();
  facts.added = event.graph_added;
  facts.guards = new_guards();
  facts.inlined = std::move(open_.back().inlined);
  open_.back().inlined.clear();
  event.note = step_note(facts);
  recorder_.step(open_.back().id, event);
}

void TraceEvents::break_step(const trace::FrameState& frame, const bytecode::Instruction& inst,
                             const std::string& kind, const std::string& message) {
  if (open_.empty()) return;
  StepEvent event = snapshot(frame, inst);
  new_guards();  // a rollback drops the guards of the abandoned instruction: just resync
  open_.back().inlined.clear();
  event.note = break_note(kind, message);
  recorder_.step(open_.back().id, event);
}

void TraceEvents::end_trace(PyObject* graph_module, const std::vector<std::string>& guards) {
  recorder_.end_trace(graph_module, guards);
}

}  // namespace bytegraph::record
