// The interpreter loop, with a checkpoint before each instruction of the outermost frame:
// an Unsupported raised anywhere inside the instruction (inlined calls included) restores
// the stack, locals, graph and guards to that boundary, and the trace stops there.
#include "trace/interpreter.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "bytecode/opcodes.h"
#include "record/trace_events.h"
#include "trace/values/autocast.h"
#include "trace/values/state_switch.h"
#include "trace/values/exceptions.h"

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
    register_match_handlers(t);
    register_control_handlers(t);
    register_call_handlers(t);
    register_import_handlers(t);
    register_exception_handlers(t);
    return t;
  }();
  return table;
}

bool& stack_effect_checks() {
  static bool on = std::getenv("BYTEGRAPH_CHECK_STACK_EFFECTS") != nullptr;
  return on;
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
  ValuePtr handled_exception;
  int handlers_open;
  size_t outside_context_count;
  size_t grad_mode_switches;
  size_t autocast_modes;
  bool torch_function_subclass_enabled;
  size_t torch_state_switches;
};

Checkpoint take_checkpoint(Tracer& tracer, const FrameState& frame) {
  return Checkpoint{frame.stack, frame.locals, frame.kw_names.copy(), frame.pc, tracer.graph.size(),
                    tracer.guards.size(), tracer.side_effects.mark(), tracer.handled_exception,
                    frame.handlers_open, tracer.exceptions_with_outside_context.size(), tracer.grad_modes_before.size(),
                    tracer.autocast_modes.size(), tracer.torch_function_subclass_enabled,
                    tracer.torch_state_before.size()};
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
  tracer.handled_exception = std::move(checkpoint.handled_exception);
  frame.handlers_open = checkpoint.handlers_open;
  tracer.exceptions_with_outside_context.resize(checkpoint.outside_context_count);
  if (tracer.grad_modes_before.size() > checkpoint.grad_mode_switches) {
    const bool mode = tracer.grad_modes_before[checkpoint.grad_mode_switches];
    check(PyObject_CallOneArg(tracer.bridge.set_grad_enabled.get(), mode ? Py_True : Py_False));
    tracer.grad_modes_before.resize(checkpoint.grad_mode_switches);
  }
  exit_autocast_modes(tracer, checkpoint.autocast_modes);
  tracer.torch_function_subclass_enabled = checkpoint.torch_function_subclass_enabled;
  restore_torch_state(tracer, checkpoint.torch_state_switches);
}

// Unwinds `frame` to the handler covering `inst`, as CPython does with the exception table:
// the stack cut to the handler's depth, the raising instruction pushed where the handler asks
// for it (only tracebacks read it), then the exception. False when no handler of this frame
// covers the instruction: the exception leaves the frame.
bool enter_handler(Tracer& tracer, FrameState& frame, const bytecode::Instruction& inst, Raised& raised) {
  chain_context(tracer, raised);
  const auto& entry = inst.exception_entry;
  if (!entry || entry->target == nullptr) return false;
  if (frame.stack.size() < static_cast<size_t>(entry->depth)) throw InternalError("an exception handler deeper than the stack");
  frame.stack.resize(static_cast<size_t>(entry->depth));
  if (entry->lasti) frame.push(ConstantValue::make(check(PyLong_FromLong(inst.offset / 2))));
  frame.push(raised.exception());
  frame.jump_to(entry->target);
  tracer.pending_user_stack.clear();  // caught: no break
  return true;
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

// The stack effect an instruction has when it runs. The opcode table's is the compiler's
// accounting, which differs from what the interpreter does in two places: 3.11 charges CALL's
// arguments to the PRECALL before it (a no-op when it runs), and RETURN_GENERATOR leaves the
// new generator for the POP_TOP after it (counted as no push before 3.13).
std::optional<int> run_time_stack_effect(const bytecode::Instruction& inst, bool jumped) {
  const int arg = inst.arg < 0 ? 0 : inst.arg;
  static const int precall = bytecode::family_opcode(bytecode::Family::kCallPrepare);
  if (inst.opcode == precall) return 0;
  std::optional<int> effect = bytecode::stack_effect(inst.opcode, arg, jumped);
  if (effect && precall >= 0 && inst.opcode == bytecode::op::CALL) return *effect + *bytecode::stack_effect(precall, arg, false);
  if (inst.opcode == bytecode::op::RETURN_GENERATOR) return 1;
  return effect;
}

// Compares a handler's net push/pop with the instruction's stack effect on the path it took
// (fall-through or jump), as CPython's interpreter declares (in -- out) per instruction; a
// mismatch is a tracer bug, reported where it happens instead of as a wrong stack later.
void check_stack_effect(const FrameState& frame, const bytecode::Instruction& inst, size_t depth_before,
                        size_t next_pc) {
  const bool jumped = frame.pc != next_pc;
  std::optional<int> expected = run_time_stack_effect(inst, jumped);
  if (!expected) return;
  const long actual = static_cast<long>(frame.stack.size()) - static_cast<long>(depth_before);
  if (actual != *expected)
    throw InternalError(std::string("stack effect of ") + opcode_name(inst.opcode) + (jumped ? " (jumping)" : "") +
                        ": the handler left " + std::to_string(actual) + ", the instruction's is " +
                        std::to_string(*expected));
}

// Runs one instruction; on a break, the innermost frame records the user stack.
void step(Tracer& tracer, FrameState& frame, const bytecode::Instruction& inst) {
  if (tracer.log) log_instruction(tracer, frame, inst);
  Handler handler = handlers()[inst.opcode];
  const size_t depth_before = frame.stack.size();
  const size_t next_pc = frame.pc;  // the caller moved past the instruction already
  try {
    if (handler == nullptr)
      unsupported("unsupported_opcode", std::string("opcode ") + opcode_name(inst.opcode) + " is not supported");
    try {
      handler(tracer, frame, inst);
      if (stack_effect_checks()) check_stack_effect(frame, inst, depth_before, next_pc);
    } catch (PythonError& error) {
      // Python code the tracer ran for real raised (an index out of range, a missing key):
      // the real call would raise there too, so stop before this instruction. An interrupt
      // (KeyboardInterrupt) is no property of the code: it reaches the caller.
      if (error.is_interrupt()) throw;
      raise_python_error(tracer, error);
    } catch (const LocatedInternalError&) {
      throw;
    } catch (const InternalError& error) {
      // A tracer bug: name the user's line it happened on (once, at the innermost frame).
      throw LocatedInternalError(std::string(error.what()) + " (while tracing " + frame_location(frame) + ")");
    }
  } catch (const Unsupported& error) {
    if (tracer.pending_user_stack.empty())
      for (const FrameState* f : tracer.frames) tracer.pending_user_stack.push_back(frame_location(*f));
    // The outermost frame records its break once rolled back (run_frame); a raised exception
    // is a break only if nothing catches it.
    if (tracer.events && !frame.outermost && dynamic_cast<const Raised*>(&error) == nullptr)
      tracer.events->break_step(frame, inst, error.kind(), error.what());
    throw;
  }
  if (tracer.events) tracer.events->step(frame, inst);
}

// An autocast block open in the outermost frame and the state before its `with`: generated code
// cannot re-enter one (its enter node is in the graph), so a break inside the block rolls the
// trace back to the `with`, where the frame breaks instead.
struct OpenAutocastBlock {
  Checkpoint before;
  const bytecode::Instruction* with;
  const Value* exit;
};

bool on_stack(const Args& stack, const Value* value) {
  return std::any_of(stack.begin(), stack.end(), [value](const ValuePtr& item) { return item.get() == value; });
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
  // Outermost frames: while a handler runs, the instruction whose exception it handles and the
  // state before it. A break inside the handler rolls back there (generated code does not
  // resume inside a handler): that instruction runs for real, raises, and the handler with it.
  std::optional<Checkpoint> raised_at;
  const bytecode::Instruction* raising = nullptr;
  std::vector<std::string> raised_stack;  // where it was raised, for the break's message
  // The handler left by a POP_EXCEPT: done, unless a RERAISE follows (a cleanup's re-raise).
  bool left_handler = false;
  std::vector<OpenAutocastBlock> autocast_blocks;
  while (!frame.result && !frame.yielded) {
    if (frame.pc >= instructions.size()) throw InternalError("the interpreter ran past the end of " + frame.code->name);
    if (frame.thrown) {
      // Raised where the generator is suspended: at its yield.
      if (frame.pc == 0) throw InternalError("an exception thrown into a generator that has not started");
      const bytecode::Instruction& at = *instructions[frame.pc - 1];
      Raised raised(std::move(frame.thrown), "uncaught_exception", "an exception thrown into a generator");
      frame.thrown = nullptr;
      raised.mark_context_set();
      if (!enter_handler(tracer, frame, at, raised)) throw raised;
    }
    const bytecode::Instruction& inst = *instructions[frame.pc];
    frame.current = &inst;
    if (!frame.outermost) {
      ++frame.pc;
      try {
        step(tracer, frame, inst);
      } catch (Raised& raised) {
        if (!enter_handler(tracer, frame, inst, raised)) throw;
      }
      continue;
    }
    if (left_handler && inst.opcode != bytecode::op::RERAISE) raised_at.reset();
    left_handler = false;
    // The previous instruction completed: nothing to undo (but a handler's whole run).
    // (Nor while an autocast block is open: a break inside rolls back to its start.)
    if (!raised_at && autocast_blocks.empty()) tracer.journal.clear();
    Checkpoint checkpoint = take_checkpoint(tracer, frame);
    ++frame.pc;
    bool entered_block = inst.opcode == bytecode::op::BEFORE_WITH;
    try {
      try {
        step(tracer, frame, inst);
      } catch (Raised& raised) {
        std::vector<std::string> user_stack = tracer.pending_user_stack;
        if (!enter_handler(tracer, frame, inst, raised)) throw;
        if (!raised_at) {
          entered_block = false;
          raised_at = std::move(checkpoint);
          raising = &inst;
          raised_stack = std::move(user_stack);
        }
      }
      left_handler = raised_at && inst.opcode == bytecode::op::POP_EXCEPT && frame.handlers_open == 0;
      std::erase_if(autocast_blocks, [&](const OpenAutocastBlock& block) { return !on_stack(frame.stack, block.exit); });
      if (entered_block && frame.stack.size() >= 2 && dynamic_cast<const AutocastExitValue*>(frame.stack[frame.stack.size() - 2].get()))
        autocast_blocks.push_back({std::move(checkpoint), &inst, frame.stack[frame.stack.size() - 2].get()});
    } catch (const Unsupported& error) {
      const bytecode::Instruction* at = raised_at ? raising : &inst;
      std::string message = error.what();
      // An exception the traced code raised and nothing in the trace caught: said so.
      if (dynamic_cast<const Raised*>(&error) != nullptr) message = "Observed exception: " + message;
      if (raised_at) message += ", in the handler of an exception raised at offset " + std::to_string(at->offset);
      restore(tracer, frame, raised_at ? *raised_at : checkpoint);
      for (OpenAutocastBlock& block : autocast_blocks) {
        if (!on_stack(frame.stack, block.exit)) continue;  // left before the state restored
        restore(tracer, frame, block.before);
        at = block.with;
        message += " (inside a torch.autocast block: the frame breaks at its `with`)";
        break;
      }
      frame.current = at;
      if (tracer.events) tracer.events->break_step(frame, *at, error.kind(), message);
      if (break_info == nullptr) throw;
      break_info->kind = error.kind();
      break_info->offset = at->offset;
      break_info->opname = opcode_name(at->opcode);
      break_info->user_stack = std::move(raised_at ? raised_stack : tracer.pending_user_stack);
      tracer.pending_user_stack.clear();
      std::string where = break_info->user_stack.empty() ? frame_location(frame) : break_info->user_stack.back();
      break_info->message = message + " (at " + where + ")";
      for (const auto& value : frame.stack) break_info->stack.push_back(value->repr());
      for (size_t i = 0; i < frame.locals.size(); ++i)
        if (frame.locals[i]) break_info->locals.emplace_back(frame.code->localsplus_names[i], frame.locals[i]->repr());
      return nullptr;
    }
  }
  return frame.result;
}

}  // namespace bytegraph::trace
