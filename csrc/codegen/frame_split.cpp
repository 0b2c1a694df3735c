#include "codegen/frame_split.h"

#include <algorithm>
#include <optional>

#include "bytecode/liveness.h"
#include "bytecode/loops.h"
#include "bytegraph/opcodes_generated.h"
#include "codegen/resume_cache.h"
#include "python/errors.h"

namespace bytegraph::codegen {

namespace op = bytecode::op;

namespace {

using bytecode::Instruction;
using bytecode::InstructionList;

constexpr int kUnsplittableFlags = CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR;

py::Ref<> torch_attr(const char* name) {
  py::Ref<> torch = check(PyImport_ImportModule("torch"));
  return check(PyObject_GetAttrString(torch.get(), name));
}

size_t index_of_offset(const InstructionList& instructions, int offset) {
  for (size_t i = 0; i < instructions.size(); ++i)
    if (instructions[i]->offset == offset) return i;
  throw InternalError("no instruction at offset " + std::to_string(offset));
}

size_t index_of(const InstructionList& instructions, const Instruction* inst) {
  for (size_t i = 0; i < instructions.size(); ++i)
    if (instructions[i].get() == inst) return i;
  throw InternalError("instruction outside the code");
}

// Stack positions of the exits (plans of `kind`) of the `with` blocks open at the break that
// generated code enters again, when the handlers protecting the breaking instruction are exactly
// those blocks' cleanups (one per block, innermost first, nothing around them); nullopt
// otherwise (an empty list: no block).
std::optional<std::vector<size_t>> open_blocks(const InstructionList& instructions, size_t at,
                                               const std::vector<OutputPlan>& stack, OutputPlan::Kind kind) {
  std::vector<size_t> exits;
  for (size_t i = 0; i < stack.size(); ++i)
    if (stack[i].kind == kind) exits.push_back(i);
  const bytecode::ExceptionTableEntry* entry = instructions[at]->exception_entry.get();
  for (auto it = exits.rbegin(); it != exits.rend(); ++it) {
    if (entry == nullptr || entry->depth != static_cast<int>(*it) + 1) return std::nullopt;
    const Instruction* handler = entry->target;
    size_t following = index_of(instructions, handler) + 1;
    if (handler->opcode != op::PUSH_EXC_INFO || following >= instructions.size() ||
        instructions[following]->opcode != op::WITH_EXCEPT_START || handler->exception_entry == nullptr)
      return std::nullopt;
    // The cleanup's own handler (COPY, POP_EXCEPT, RERAISE) is protected by the next block out.
    entry = handler->exception_entry->target->exception_entry.get();
  }
  if (entry != nullptr) return std::nullopt;
  return exits;
}

// A jump back over `offset` in the normal control flow (not an exception handler's jump back
// to the code after a `with` block, as 3.12+ compiles them): the instruction is in a loop.
bool inside_loop(const InstructionList& instructions, int offset) {
  for (std::size_t i = 0; i < instructions.size(); ++i)
    if (instructions[i]->offset == offset) return bytecode::inside_loop(instructions, i);
  return false;
}

std::string why_not_split(PyCodeObject* code, const InstructionList& instructions, int offset, const BreakSite& site) {
  if (code->co_flags & kUnsplittableFlags) return "generators and coroutines are not split";
  if (!site.not_splittable.empty()) return site.not_splittable;
  if (site.handler && !has_original_instruction(reinterpret_cast<PyObject*>(code), site.handler->offset))
    return "its exception handler was made for the resume function (an unbound cell read raises there)";
  if (is_resume_code(reinterpret_cast<PyObject*>(code)) && inside_loop(instructions, offset)) {
    // Its continuation would be itself (or another resume function of the same loop),
    // nesting one call per iteration: the loop's remaining iterations run eagerly.
    return "a break inside a loop of a resume function is not split again";
  }
  return {};
}

// The blocks' exits become plans that enter the same modes again (outermost first); the
// mode outside them is restored by generated code before the breaking instruction runs.
void enter_grad_mode_blocks_again(std::vector<OutputPlan>& stack, const std::vector<size_t>& exits, bool grad_enabled) {
  for (size_t k = 0; k < exits.size(); ++k) {
    bool inside = k + 1 < exits.size() ? stack[exits[k + 1]].constant.get() == Py_True : grad_enabled;
    OutputPlan enter;
    enter.kind = OutputPlan::Kind::EnterContext;
    enter.constant = torch_attr(inside ? "enable_grad" : "no_grad");
    stack[exits[k]] = std::move(enter);
  }
}

// Each stack slot's kind for the resume functions. A loop iterator the breaking instruction
// does not consume is passed on as the tuple of its remaining items (the resume function's
// prologue calls iter() on it), so the resumed loop can be traced; one over a list, as the
// list and its index (the prologue makes the list's own iterator from them).
void stack_kinds(std::vector<OutputPlan>& stack, const BreakSite& site, std::vector<StackSlot>& kinds,
                 std::vector<py::Ref<>>& contexts) {
  size_t most_popped = stack.size();
  if (!site.continuations.empty()) {
    most_popped = 0;
    for (const Continuation& next : site.continuations) most_popped = std::max(most_popped, static_cast<size_t>(next.pops));
  }
  const size_t untouched = stack.size() - std::min(stack.size(), most_popped);
  for (size_t i = 0; i < stack.size(); ++i) {
    OutputPlan& plan = stack[i];
    contexts.emplace_back();
    if (plan.kind == OutputPlan::Kind::Null) {
      kinds.push_back(StackSlot::Null);
    } else if (plan.kind == OutputPlan::Kind::EnterContext) {
      kinds.push_back(StackSlot::Context);
      contexts.back() = plan.constant.copy();
    } else if (plan.kind == OutputPlan::Kind::Iterator && plan.constant && i < untouched) {
      kinds.push_back(StackSlot::ListIterator);
      contexts.back() = std::move(plan.constant);
      OutputPlan state = std::move(plan.items.at(0));
      plan = std::move(state);
    } else if (plan.kind == OutputPlan::Kind::Iterator && i < untouched) {
      plan.kind = OutputPlan::Kind::Tuple;
      kinds.push_back(StackSlot::Iterator);
    } else {
      kinds.push_back(StackSlot::Value);
    }
  }
}

// Zero-argument super() reads the instance from the frame's first slot and the class from the
// __class__ cell: a resume function of such code takes the original's first argument first,
// whether or not liveness sees it used.
void keep_instance_first(PyCodeObject* code, std::vector<std::string>& names,
                         const std::vector<std::pair<std::string, OutputPlan>>& locals) {
  py::Ref<> freevars = check(PyCode_GetFreevars(code));
  bool has_class_cell = false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(freevars.get()); ++i)
    has_class_cell |= PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(freevars.get(), i), "__class__") == 0;
  if (!has_class_cell || code->co_argcount == 0) return;
  py::Ref<> varnames = check(PyCode_GetVarnames(code));
  std::string first = PyUnicode_AsUTF8(PyTuple_GET_ITEM(varnames.get(), 0));
  bool passed = std::any_of(locals.begin(), locals.end(), [&](const auto& local) { return local.first == first; });
  if (!passed) return;
  names.erase(std::remove(names.begin(), names.end(), first), names.end());
  names.insert(names.begin(), first);
}

// The stack a resume function takes: a slot kind per entry, and a context manager's object
// for a `with` block it enters again.
struct ResumeStack {
  std::vector<StackSlot> slots;
  std::vector<py::Ref<>> contexts;
  void push(StackSlot slot) {
    slots.push_back(slot);
    contexts.emplace_back();
  }
};

// The bottom `count` entries of the stack at the break.
ResumeStack stack_prefix(const std::vector<StackSlot>& kinds, const std::vector<py::Ref<>>& contexts, size_t count) {
  ResumeStack prefix;
  prefix.slots.assign(kinds.begin(), kinds.begin() + static_cast<std::ptrdiff_t>(count));
  for (size_t i = 0; i < count; ++i) prefix.contexts.push_back(contexts[i].copy());
  return prefix;
}

// Resume functions of one frame's break: each continues at an offset with a stack, taking the
// locals live there.
struct ResumeTarget {
  PyCodeObject* code;
  const InstructionList& instructions;
  const trace::BreakState& state;

  ResumeCall resume_at(int offset, const ResumeStack& stack) const {
    std::vector<std::string> live = bytecode::live_locals_at(instructions, index_of_offset(instructions, offset));
    std::vector<std::string> names;
    for (const auto& [name, plan] : state.locals)
      if (std::find(live.begin(), live.end(), name) != live.end()) names.push_back(name);
    keep_instance_first(code, names, state.locals);
    ResumeCall resume;
    resume.code = resume_code_for(code, offset, stack.slots, stack.contexts, names);
    for (StackSlot slot : stack.slots) {
      resume.stack_nulls.push_back(slot == StackSlot::Null || slot == StackSlot::Context);
      resume.exits.push_back(slot == StackSlot::Context);
    }
    resume.locals = std::move(names);
    return resume;
  }
};

// Where the breaking instruction (at `offset` of the original) sits in the handler's resume
// code, in code units; `unknown` when that code does not hold it.
int lasti_in_resume(PyCodeObject* code, int offset, PyObject* resume_code, int unknown) {
  const int original = original_offset(reinterpret_cast<PyObject*>(code), offset);
  int lasti = unknown;
  if (const ResumeOrigin* origin = resume_origin(resume_code)) {
    for (const auto& [mine, theirs] : origin->offsets)
      if (theirs == original) lasti = mine / 2;
  }
  return lasti;
}

}  // namespace

FrameSplit plan_split(PyCodeObject* code, const trace::TraceResult& result) {
  FrameSplit split;
  const trace::BreakState& state = *result.break_state;
  if (!state.not_restorable.empty()) {
    split.eager_reason = state.not_restorable;
    return split;
  }
  const InstructionList& instructions = result.code->instructions;
  const int offset = result.graph_break->offset;
  const size_t at = index_of_offset(instructions, offset);
  std::vector<OutputPlan> stack = state.stack;
  auto any_block = [&](OutputPlan::Kind kind) {
    return std::any_of(stack.begin(), stack.end(), [&](const OutputPlan& plan) { return plan.kind == kind; });
  };
  const bool any_grad_block = any_block(OutputPlan::Kind::GradModeExit);
  const bool any_context_block = any_block(OutputPlan::Kind::ContextExit);
  if (any_grad_block && any_context_block) {
    split.eager_reason = "a graph break inside both grad-mode blocks and other `with` blocks entered again";
    return split;
  }
  const OutputPlan::Kind exit_kind = any_context_block ? OutputPlan::Kind::ContextExit : OutputPlan::Kind::GradModeExit;
  std::optional<std::vector<size_t>> blocks = open_blocks(instructions, at, stack, exit_kind);
  if ((any_grad_block || any_context_block) && !blocks) {
    // Generated code re-enters blocks only where nothing else (a try block inside them)
    // protects the breaking instruction.
    split.eager_reason = "a graph break inside a try block within a `with` block";
    return split;
  }
  const bool in_grad_blocks = any_grad_block && !blocks->empty();
  const bool in_context_blocks = any_context_block && !blocks->empty();
  // Grad-mode blocks: generated code restores the mode if the instruction raises. Other blocks:
  // the innermost block's own cleanup handles it, given the exits generated code entered.
  split.site = find_break_site(instructions, offset, in_grad_blocks);
  split.eager_reason = why_not_split(code, instructions, offset, split.site);
  if (!split.eager_reason.empty()) return split;
  BreakCall& call = split.call;
  if (in_grad_blocks) {
    call.set_grad_enabled = torch_attr("_C");
    call.set_grad_enabled = check(PyObject_GetAttrString(call.set_grad_enabled.get(), "_set_grad_enabled"));
    call.grad_enabled_outside = stack[blocks->front()].constant.copy();
    enter_grad_mode_blocks_again(stack, *blocks, state.grad_enabled);
  }
  if (in_context_blocks) {
    // The graph put back the state outside the blocks; their contexts are made again.
    for (size_t exit : *blocks) stack[exit].kind = OutputPlan::Kind::EnterContext;
    call.close_contexts = true;
  }
  std::vector<StackSlot> kinds;
  std::vector<py::Ref<>> contexts;
  stack_kinds(stack, split.site, kinds, contexts);
  const ResumeTarget target{code, instructions, state};
  for (const Continuation& next : split.site.continuations) {
    ResumeStack resumed = stack_prefix(kinds, contexts, kinds.size() - std::min(kinds.size(), static_cast<size_t>(next.pops)));
    for (int i = 0; i < next.pushes; ++i) resumed.push(i == next.null_pushed ? StackSlot::Null : StackSlot::Value);
    call.resumes.push_back(target.resume_at(next.offset, resumed));
  }
  if (split.site.handler) {
    // If the instruction raises, the original's handler takes over: its own continuation,
    // with the exception (and, for a `lasti` handler, the offset) pushed.
    const ExceptionHandler& handler = *split.site.handler;
    ResumeStack resumed = stack_prefix(kinds, contexts, std::min(kinds.size(), static_cast<size_t>(handler.depth)));
    // The handler exits the blocks generated code entered: their exits are passed on.
    for (size_t i = 0; i < resumed.slots.size(); ++i) {
      if (resumed.slots[i] != StackSlot::Context) continue;
      resumed.slots[i] = StackSlot::Value;
      resumed.contexts[i] = py::Ref<>();
    }
    for (int extra = handler.lasti ? 2 : 1; extra > 0; --extra) resumed.push(StackSlot::Value);
    call.handler_resume = target.resume_at(handler.offset, resumed);
    call.handler_lasti = lasti_in_resume(code, offset, call.handler_resume->code.get(), call.handler_lasti);
  }
  call.stack = std::move(stack);
  call.locals = state.locals;
  call.cells = state.cells;
  call.effects = state.side_effects;
  call.new_objects = state.new_objects;
  call.kw_names = state.kw_names ? state.kw_names.copy() : py::Ref<>();
  call.offset = offset;
  return split;
}

}  // namespace bytegraph::codegen
