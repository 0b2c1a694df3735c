// The interpreter loop, with a checkpoint before each instruction of the outermost frame:
// an Unsupported raised anywhere inside the instruction (inlined calls included) restores
// the stack, locals, graph and guards to that boundary, and the trace stops there.
#include "trace/interpreter.h"

#include <cstring>

#include "bytecode/opcodes.h"
#include "record/trace_events.h"

namespace bytegraph::trace {

void HandlerTable::add(int opcode, Handler handler) {
  if (!bytecode::is_known_opcode(opcode) || table_[opcode] != nullptr)
    throw InternalError(std::string("handler registered twice or for an unknown opcode: ") + opcode_name(opcode));
  table_[opcode] = handler;
}

void HandlerTable::add(bytecode::Family family, Handler handler) {
  for (int opcode = 0; opcode < 256; ++opcode)
    if (bytecode::opcode_info(opcode).known && bytecode::in_family(opcode, family)) add(opcode, handler);
}

const HandlerTable& handlers() {
  static const HandlerTable table = [] {
    HandlerTable t;
    register_stack_handlers(t);
    register_operator_handlers(t);
    register_container_handlers(t);
    register_control_handlers(t);
    register_call_handlers(t);
    return t;
  }();
  return table;
}

const char* opcode_name(int opcode) {
  const char* name = bytecode::opcode_info(opcode).name;
  return name && *name ? name : "<unknown opcode>";
}

namespace {

struct Checkpoint {
  Args stack;
  Args locals;
  py::Ref<> kw_names;
  size_t pc;
  size_t graph_length;
  size_t guard_count;
  SideEffects::Mark side_effects;
};

Checkpoint take_checkpoint(Tracer& tracer, const FrameState& frame) {
  return Checkpoint{frame.stack, frame.locals, frame.kw_names.copy(), frame.pc, tracer.graph.size(),
                    tracer.guards.size(), tracer.side_effects.mark()};
}

void restore(Tracer& tracer, FrameState& frame, Checkpoint& checkpoint) {
  frame.stack = std::move(checkpoint.stack);
  frame.locals = std::move(checkpoint.locals);
  frame.kw_names = std::move(checkpoint.kw_names);
  frame.pc = checkpoint.pc;
  frame.current = frame.code->instructions[frame.pc].get();
  frame.result = nullptr;
  tracer.journal.undo_to(0);
  tracer.truncate(checkpoint.graph_length);
  tracer.guards.truncate(checkpoint.guard_count);
  tracer.side_effects.rollback(checkpoint.side_effects);
}

std::string frame_location(const FrameState& frame) {
  int line = frame.current ? frame.current->positions.lineno : -1;
  return frame.code->filename + ":" + std::to_string(line) + " in " + frame.code->name;
}

void log_instruction(Tracer& tracer, const FrameState& frame, const bytecode::Instruction& inst) {
  std::string line = std::string("TRACE ") + opcode_name(inst.opcode);
  // Names print bare (`LOAD_FAST self`), other arguments as their repr.
  if (inst.argval) line += " " + (PyUnicode_Check(inst.argval.get()) ? py_str(inst.argval.get()) : py_repr(inst.argval.get()));
  else if (inst.arg >= 0) line += " " + std::to_string(inst.arg);
  line += " [";
  for (size_t i = 0; i < frame.stack.size(); ++i) line += (i ? ", " : "") + frame.stack[i]->repr();
  line += "]";
  py::Ref<> text = check(PyUnicode_FromString(line.c_str()));
  check(PyObject_CallOneArg(tracer.log.get(), text.get()));
}

// Runs one instruction; on a break, the innermost frame records the user stack.
void step(Tracer& tracer, FrameState& frame, const bytecode::Instruction& inst) {
  if (tracer.log) log_instruction(tracer, frame, inst);
  Handler handler = handlers()[inst.opcode];
  try {
    if (handler == nullptr)
      unsupported("unsupported_opcode", std::string("opcode ") + opcode_name(inst.opcode) + " is not supported");
    try {
      handler(tracer, frame, inst);
    } catch (PythonError& error) {
      // Python code the tracer ran for real raised (an index out of range, a missing key):
      // the real call would raise there too, so stop before this instruction.
      unsupported("python_error", error.what());
    }
  } catch (const Unsupported& error) {
    if (tracer.pending_user_stack.empty())
      for (const FrameState* f : tracer.frames) tracer.pending_user_stack.push_back(frame_location(*f));
    // The outermost frame records its break once rolled back (run_frame).
    if (tracer.events && !frame.outermost) tracer.events->break_step(frame, inst, error.kind(), error.what());
    throw;
  }
  if (tracer.events) tracer.events->step(frame, inst);
}

struct FramePush {
  Tracer& tracer;
  FramePush(Tracer& t, FrameState* frame) : tracer(t) { tracer.frames.push_back(frame); }
  ~FramePush() { tracer.frames.pop_back(); }
};

}  // namespace

ValuePtr run_frame(Tracer& tracer, FrameState& frame, BreakInfo* break_info) {
  FramePush push(tracer, &frame);
  record::FrameScope recorded(tracer.events.get(), frame);
  const auto& instructions = frame.code->instructions;
  while (!frame.result) {
    if (frame.pc >= instructions.size()) throw InternalError("the interpreter ran past the end of " + frame.code->name);
    const bytecode::Instruction& inst = *instructions[frame.pc];
    frame.current = &inst;
    if (!frame.outermost) {
      ++frame.pc;
      step(tracer, frame, inst);
      continue;
    }
    tracer.journal.clear();  // the previous instruction completed: nothing to undo
    Checkpoint checkpoint = take_checkpoint(tracer, frame);
    ++frame.pc;
    try {
      step(tracer, frame, inst);
    } catch (const Unsupported& error) {
      restore(tracer, frame, checkpoint);
      if (tracer.events) tracer.events->break_step(frame, inst, error.kind(), error.what());
      if (break_info == nullptr) throw;
      break_info->kind = error.kind();
      break_info->offset = inst.offset;
      break_info->opname = opcode_name(inst.opcode);
      break_info->user_stack = std::move(tracer.pending_user_stack);
      tracer.pending_user_stack.clear();
      std::string where = break_info->user_stack.empty() ? frame_location(frame) : break_info->user_stack.back();
      break_info->message = std::string(error.what()) + " (at " + where + ")";
      for (const auto& value : frame.stack) break_info->stack.push_back(value->repr());
      for (size_t i = 0; i < frame.locals.size(); ++i)
        if (frame.locals[i]) break_info->locals.emplace_back(frame.code->localsplus_names[i], frame.locals[i]->repr());
      return nullptr;
    }
  }
  return frame.result;
}

}  // namespace bytegraph::trace
