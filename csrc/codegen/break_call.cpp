#include "codegen/break_call.h"

#include "bytecode/assemble.h"
#include "bytecode/decode.h"
#include "bytecode/opcodes.h"
#include "codegen/break_site.h"
#include "codegen/code_builder.h"
#include "codegen/new_objects.h"
#include "codegen/graph_call.h"
#include "codegen/prefix.h"
#include "python/errors.h"

namespace bytegraph::codegen {

namespace op = bytecode::op;

namespace {

constexpr int kMakeFunctionClosure = 0x08;

std::string temporary_name(std::size_t position) { return "___tmp" + std::to_string(position); }

bool uses_graph_outputs(const BreakCall& call) {
  for (const OutputPlan& plan : call.stack)
    if (plan.uses_graph_outputs()) return true;
  for (const auto& [name, plan] : call.locals)
    if (plan.uses_graph_outputs()) return true;
  for (const auto& [name, plan] : call.cells)
    if (plan.uses_graph_outputs()) return true;
  return uses_graph_outputs(call.effects) || uses_graph_outputs(call.new_objects);
}

void emit_set_grad_enabled(CodeBuilder& builder, const BreakCall& call) {
  builder.before_callable();
  builder.load_const(call.set_grad_enabled.get());
  builder.after_callable();
  builder.load_const(call.grad_enabled_outside.get());
  builder.call(1);
  builder.emit(op::POP_TOP);
}

// The handler of the breaking instruction inside grad-mode blocks: [exc] -> the outside mode
// is back, and the exception propagates (generated code has no other handler).
bytecode::Instruction* emit_grad_mode_handler(CodeBuilder& builder, const BreakCall& call) {
  const std::size_t first = builder.instructions().size();
  emit_set_grad_enabled(builder, call);
  builder.emit(op::RERAISE, 0);
  return builder.instructions()[first].get();
}

std::string parked_name(std::size_t position) { return "___value" + std::to_string(position); }

// Whether a stack value is pushed again after the writes rather than parked: NULL (a local
// cannot hold one for LOAD_FAST) and constants (they read nothing a write could change).
bool pushed_late(const OutputPlan& plan) {
  return plan.kind == OutputPlan::Kind::Null || plan.kind == OutputPlan::Kind::Constant;
}

// Every value is evaluated before anything is written: side effects, cells and locals. The
// stack's values are parked in temporaries meanwhile and pushed last, so the code reads as
// statements (a decompiler cannot show a value left on the stack across stores).
void restore_state(CodeBuilder& builder, const BreakCall& call, PyCodeObject* code) {
  emit_new_objects(builder, call.new_objects, code);
  emit_side_effect_operands(builder, call.effects, code);
  for (std::size_t i = 0; i < call.stack.size(); ++i) {
    if (pushed_late(call.stack[i])) continue;
    emit_plan(builder, call.stack[i], code);
    builder.store_fast(parked_name(i));
  }
  for (const auto& [name, plan] : call.locals) emit_plan(builder, plan, code);
  for (const auto& [name, plan] : call.cells) emit_plan(builder, plan, code);
  emit_side_effect_writes(builder, call.effects);
  for (auto it = call.cells.rbegin(); it != call.cells.rend(); ++it)
    builder.emit(op::STORE_DEREF, -1, interned(it->first));
  for (auto it = call.locals.rbegin(); it != call.locals.rend(); ++it) builder.store_fast(it->first);
  for (std::size_t i = 0; i < call.stack.size(); ++i) {
    if (pushed_late(call.stack[i])) emit_plan(builder, call.stack[i], code);
    else builder.load_fast(parked_name(i));
  }
}

// resume(*locals, *stack) with a function made here, so it gets this frame's globals and,
// through the cells it loads, this frame's cells: its free variables are this frame's free
// variables and cell variables, by name.
void emit_resume_call(CodeBuilder& builder, const ResumeCall& resume, bool close_contexts = false) {
  const std::size_t depth = resume.stack_nulls.size();
  auto closed = [&](std::size_t i) { return close_contexts && resume.exits.at(i); };
  // The stack is parked in temporaries (STORE_FAST also takes a NULL) so the function and
  // the call protocol's NULL can go below the arguments.
  for (std::size_t i = depth; i-- > 0;)
    builder.store_fast(resume.stack_nulls[i] && !closed(i) ? "___null" : temporary_name(i));
  // __exit__(None, None, None) of the blocks entered for the breaking instruction, innermost
  // first: the resume function enters them again.
  for (std::size_t i = depth; i-- > 0;) {
    if (!closed(i)) continue;
    builder.before_callable();
    builder.load_fast(temporary_name(i));
    builder.after_callable();
    for (int k = 0; k < 3; ++k) builder.load_const(Py_None);
    builder.call(3);
    builder.pop_top();
  }
  builder.before_callable();
  py::Ref<> freevars = check(PyCode_GetFreevars(reinterpret_cast<PyCodeObject*>(resume.code.get())));
  const Py_ssize_t nfree = PyTuple_GET_SIZE(freevars.get());
  for (Py_ssize_t i = 0; i < nfree; ++i)
    builder.load_cell(PyUnicode_AsUTF8(PyTuple_GET_ITEM(freevars.get(), i)));
  if (nfree > 0) builder.build(op::BUILD_TUPLE, static_cast<int>(nfree));
  builder.load_const(resume.code.get());
  builder.make_function(nfree > 0 ? kMakeFunctionClosure : 0);
  builder.after_callable();
  int nargs = 0;
  for (const std::string& name : resume.locals) {
    builder.load_fast(name);
    ++nargs;
  }
  for (std::size_t i = 0; i < depth; ++i) {
    if (resume.stack_nulls[i]) continue;
    builder.load_fast(temporary_name(i));
    ++nargs;
  }
  builder.call(nargs);
  builder.return_value();
}

// The breaking instruction raised inside the original's try block or with statement: the
// stack is [stack below the handler's depth, (the raising offset), the exception], as the
// original's handler expects; its resume function takes them from here. The raising offset
// CPython pushed is this code's: the resume function's own offset of that instruction
// replaces it, so a re-raise there points at the right line.
bytecode::Instruction* emit_handler_continuation(CodeBuilder& builder, const ExceptionHandler& handler,
                                                 const BreakCall& call) {
  const std::size_t first = builder.instructions().size();
  if (handler.lasti) {
    py::Ref<> lasti = check(PyLong_FromLong(call.handler_lasti));
    builder.emit(op::SWAP, 2);
    builder.pop_top();
    builder.load_const(lasti.get());
    builder.emit(op::SWAP, 2);
  }
  emit_resume_call(builder, *call.handler_resume);
  return builder.instructions()[first].get();
}

}  // namespace

py::Ref<> generate_break_call(PyCodeObject* code, const bytecode::InstructionList& instructions, const BreakSite& site,
                              const BreakCall& call, const std::vector<guards::SourcePtr>& inputs, PyObject* compiled_fn,
                              const EagerFallback& fallback) {
  if (!site.not_splittable.empty()) throw InternalError("cannot split here: " + site.not_splittable);
  if (site.continuations.size() != call.resumes.size())
    throw InternalError("the breaking instruction has " + std::to_string(site.continuations.size()) +
                        " continuation(s), got " + std::to_string(call.resumes.size()));
  const bytecode::Instruction& inst = *instructions[site.index];
  const bool in_grad_mode_block = static_cast<bool>(call.set_grad_enabled);

  CodeBuilder builder;
  copy_prefix(builder, code);
  builder.set_positions(first_line_positions(code));
  const std::size_t call_start = builder.instructions().size();
  if (compiled_fn) emit_graph_call(builder, inputs, compiled_fn, uses_graph_outputs(call), code);
  const std::size_t call_end = builder.instructions().size();
  if (in_grad_mode_block) emit_set_grad_enabled(builder, call);
  restore_state(builder, call, code);

  builder.set_positions(inst.positions);
  const std::size_t first_protected = builder.instructions().size();
  bytecode::Instruction* branch = nullptr;
  switch (site.kind) {
    case BreakSite::Kind::Call:
      if (bytecode::in_family(inst.opcode, bytecode::Family::kCallKw)) {
        builder.emit(inst.opcode, inst.arg);  // the keyword names are on the restored stack
      } else if (call.kw_names && call.kw_names.get() != Py_None) {
        builder.call_with_keywords(inst.arg, call.kw_names.get());
      } else {
        builder.call(inst.arg);
      }
      break;
    case BreakSite::Kind::Branch: {
      // Where conditional jumps take exact bools (3.13: the compiler puts TO_BOOL before
      // them, and the tracer lets a tensor through it to break here), convert first.
      static const int to_bool = bytecode::family_opcode(bytecode::Family::kToBool);
      const bytecode::Family family = bytecode::opcode_info(inst.opcode).family;
      if (to_bool >= 0 && (family == bytecode::Family::kPopJumpIfTrue || family == bytecode::Family::kPopJumpIfFalse))
        builder.emit(to_bool);
      branch = &builder.emit(inst.opcode, 0);
      break;
    }
    case BreakSite::Kind::Simple:
    case BreakSite::Kind::Terminal:
      builder.emit(inst.opcode, inst.arg, inst.argval.copy());
      break;
    case BreakSite::Kind::MethodLoad:
      // The attribute bound, and a NULL where the call protocol expects the method pair.
      builder.load_attr(PyUnicode_AsUTF8(inst.argval.get()));
      builder.emit(op::PUSH_NULL);
      if (!bytecode::kCallNullAfterCallable) builder.emit(op::SWAP, 2);
      break;
  }
  const std::size_t end_protected = builder.instructions().size();
  for (std::size_t i = 0; i < call.resumes.size(); ++i) {
    const std::size_t first = builder.instructions().size();
    if (in_grad_mode_block) emit_set_grad_enabled(builder, call);
    emit_resume_call(builder, call.resumes[i], call.close_contexts);
    if (branch != nullptr && i == 1) branch->target = builder.instructions()[first].get();
  }
  std::shared_ptr<bytecode::ExceptionTableEntry> entry;
  if (in_grad_mode_block) {
    entry = std::make_shared<bytecode::ExceptionTableEntry>();
    entry->target = emit_grad_mode_handler(builder, call);
    entry->depth = 0;
    entry->lasti = false;
  } else if (site.handler) {
    if (!call.handler_resume) throw InternalError("a protected breaking instruction without a handler continuation");
    entry = std::make_shared<bytecode::ExceptionTableEntry>();
    entry->target = emit_handler_continuation(builder, *site.handler, call);
    entry->depth = site.handler->depth;
    entry->lasti = site.handler->lasti;
  }
  if (entry) {
    for (std::size_t i = first_protected; i < end_protected; ++i) builder.instructions()[i]->exception_entry = entry;
    entry->start = builder.instructions()[first_protected].get();
    entry->end = builder.instructions()[end_protected - 1].get();
  }
  append_eager_fallback(builder, call_start, call_end, fallback, code);
  bytecode::InstructionList generated = builder.take();
  return bytecode::assemble(generated, code);
}

}  // namespace bytegraph::codegen
