// Jumps, branches, for-loops over known iterators, and returns.
#include "trace/interpreter.h"
#include "trace/operators.h"

namespace bytegraph::trace {

namespace {

using bytecode::Instruction;

void jump(Tracer&, FrameState& frame, const Instruction& inst) { frame.jump_to(inst.target); }

template <bool JumpIf>
void pop_jump_if(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr condition = frame.pop();
  if (condition->truthy(tracer) == JumpIf) frame.jump_to(inst.target);
}

bool is_none(const ValuePtr& value) {
  if (value->is_constant()) return value->constant() == Py_None;
  if (value->is_tensor() || value->real_object() || dynamic_cast<SequenceValue*>(value.get()) ||
      dynamic_cast<DictValue*>(value.get()) || dynamic_cast<UserFunctionValue*>(value.get()))
    return false;
  unsupported("unsupported_branch", "`is None` on " + value->repr());
}

template <bool JumpIfNone>
void pop_jump_if_none(Tracer&, FrameState& frame, const Instruction& inst) {
  ValuePtr value = frame.pop();
  if (is_none(value) == JumpIfNone) frame.jump_to(inst.target);
}

template <bool JumpIf>
void jump_if_or_pop(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  if (frame.top()->truthy(tracer) == JumpIf) {
    frame.jump_to(inst.target);
  } else {
    frame.pop();
  }
}

void get_iter(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr iterable = frame.pop();
  if (dynamic_cast<IteratorValue*>(iterable.get())) {
    frame.push(iterable);
    return;
  }
  auto items = iterable->unpack(tracer);
  if (!items) unsupported("unsupported_iteration", "iterating over " + iterable->repr());
  frame.push(std::make_shared<IteratorValue>(std::move(*items)));
}

void for_iter(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  auto* iterator = dynamic_cast<IteratorValue*>(frame.top().get());
  // A real iterator handed in from outside (a comprehension's `.0` argument) cannot be
  // advanced without consuming it: that loop runs for real.
  if (iterator == nullptr) unsupported("unsupported_iteration", "advancing " + frame.top()->repr());
  tracer.journal.save(frame.top());
  if (ValuePtr item = iterator->next()) {
    frame.push(std::move(item));
    return;
  }
  // Exhausted: reach the target with the stack the compiler's model has there (dis's
  // stack effect of the taken jump): the iterator gone (3.11), or the iterator and a value
  // still there for END_FOR (and 3.13's POP_TOP after it) to pop. The interpreter skips
  // those instructions instead; the stack after them is the same.
  const size_t before = frame.stack.size();
  const int effect = bytecode::stack_effect(inst.opcode, inst.arg, true).value_or(-1);
  frame.pop();
  while (static_cast<long>(frame.stack.size()) < static_cast<long>(before) + effect) frame.push(ConstantValue::none());
  frame.jump_to(inst.target);
}

// END_FOR pops what its stack effect says (the iterator and a value on 3.12, one value on 3.13).
void end_for(Tracer&, FrameState& frame, const Instruction& inst) {
  const int effect = bytecode::stack_effect(inst.opcode, 0, false).value_or(0);
  for (int i = 0; i < -effect; ++i) frame.pop();
}

// Generators run eagerly (see Tracer::inline_call): starting one resumes it at once with
// the None a first next() sends, and each yield is collected, resumed with None too.
void return_generator(Tracer&, FrameState& frame, const Instruction&) {
  if (!frame.yielded) unsupported("generator", "tracing a generator function as the outermost frame");
  frame.push(ConstantValue::none());
}

void yield_value(Tracer&, FrameState& frame, const Instruction&) {
  if (!frame.yielded) unsupported("generator", "yield outside an eagerly run generator");
  if (frame.yielded->size() >= 10000) unsupported("generator", "a generator yielded more than 10000 items");
  frame.yielded->push_back(frame.pop());
  frame.push(ConstantValue::none());
}

// `with ctx:` — only grad-mode context managers are understood so far.
void before_with(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr context = frame.pop();
  auto* grad_mode = dynamic_cast<GradModeValue*>(context.get());
  if (grad_mode == nullptr) unsupported("unsupported_context", "`with` on " + context->repr());
  frame.push(grad_mode->enter(tracer));
  frame.push(ConstantValue::none());  // what __enter__ returned
}

void return_value(Tracer&, FrameState& frame, const Instruction&) { frame.result = frame.pop(); }

void return_const(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  frame.result = tracer.wrap(inst.argval.get(), nullptr);
}

}  // namespace

void register_control_handlers(HandlerTable& table) {
  table.add(Family::kJump, jump);
  table.add(Family::kPopJumpIfTrue, pop_jump_if<true>);
  table.add(Family::kPopJumpIfFalse, pop_jump_if<false>);
  table.add(Family::kPopJumpIfNone, pop_jump_if_none<true>);
  table.add(Family::kPopJumpIfNotNone, pop_jump_if_none<false>);
  table.add(Family::kJumpIfTrueOrPop, jump_if_or_pop<true>);
  table.add(Family::kJumpIfFalseOrPop, jump_if_or_pop<false>);
  table.add(op::GET_ITER, get_iter);
  table.add(op::FOR_ITER, for_iter);
  table.add(Family::kEndFor, end_for);
  table.add(op::RETURN_VALUE, return_value);
  table.add(op::BEFORE_WITH, before_with);
  table.add(op::RETURN_GENERATOR, return_generator);
  table.add(op::YIELD_VALUE, yield_value);
  table.add(Family::kReturnConst, return_const);
}

}  // namespace bytegraph::trace
