// Jumps, branches, for-loops over known iterators, and returns.
#include "trace/interpreter.h"
#include "trace/operators.h"
#include "trace/values/context_reentry.h"
#include "trace/values/generators.h"
#include "trace/values/exceptions.h"
#include "bytecode/opcodes.h"

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
  if (PyObject* real = value->real_object()) return real == Py_None;
  // Any value whose type the trace knows (a tensor, a container, an object it made): None is
  // the one instance of its own type.
  if (PyObject* type = value->python_type()) return type == reinterpret_cast<PyObject*>(Py_TYPE(Py_None));
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
  // iter(obj) runs the class's Python __iter__; what it returns is advanced a step at a time.
  if (auto* object = dynamic_cast<ObjectValue*>(iterable.get())) {
    if (ValuePtr iterator = object->inline_special(tracer, "__iter__", {})) {
      if (!iterator->is_iterator()) iterator = iterator_over(tracer, iterator);
      if (!iterator) unsupported("unsupported_iteration", "iterating over what " + iterable->repr() + ".__iter__() returned");
      frame.push(std::move(iterator));
      return;
    }
  }
  if (iterable->is_iterator()) {
    frame.push(iterable);
    return;
  }
  ValuePtr iterator = iterator_over(tracer, iterable);
  if (!iterator) {
    if (iterable->is_constant()) raise_error("unsupported_iteration", PyExc_TypeError, "'" + std::string(Py_TYPE(iterable->constant())->tp_name) + "' object is not iterable");
    unsupported("unsupported_iteration", "iterating over " + iterable->repr());
  }
  frame.push(std::move(iterator));
}

void for_iter(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr iterator = frame.top();
  // A real iterator handed in from outside (a comprehension's `.0` argument) cannot be
  // advanced without consuming it: that loop runs for real.
  if (!iterator->is_iterator()) unsupported("unsupported_iteration", "advancing " + iterator->repr());
  if (ValuePtr item = iterator->next_item(tracer)) {
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

// A generator's frame (values/generators.h) starts here on the first next(), which sends None.
void return_generator(Tracer&, FrameState& frame, const Instruction&) {
  if (!frame.generator) unsupported("generator", "tracing a generator function as the outermost frame");
  frame.push(ConstantValue::none());
}

// Suspends the generator's frame with the item; resuming it continues with the None that
// next() sends.
void yield_value(Tracer&, FrameState& frame, const Instruction&) {
  if (!frame.generator) unsupported("generator", "yield outside a generator called from traced code");
  frame.yielded = frame.pop();
  frame.push(ConstantValue::none());
}

// `yield from x`: iterate x, generators and lazy iterators as they are.
void get_yield_from_iter(Tracer& tracer, FrameState& frame, const Instruction& inst) { get_iter(tracer, frame, inst); }

// [receiver, sent] -> [receiver, item] while the receiver yields; once it is exhausted, the
// value `yield from` evaluates to, and a jump. Whether the receiver is popped then (3.11) or
// by the END_SEND the jump lands on differs by version: the opcode table's stack effect says.
void send(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr sent = frame.pop();
  ValuePtr receiver = frame.top();
  auto* generator = dynamic_cast<GeneratorValue*>(receiver.get());
  const bool none = sent->is_constant() && sent->constant() == Py_None;
  ValuePtr item, result = ConstantValue::none();
  if (generator) {
    // A value sent into the delegating generator goes on to the generator it delegates to.
    item = none ? generator->next_item(tracer) : generator->resume(tracer, sent, nullptr);
    if (!item) result = generator->returned();
  } else if (none) {
    if (!receiver->is_iterator()) unsupported("unsupported_iteration", "yield from " + receiver->repr());
    item = receiver->next_item(tracer);
  } else {
    // Any other iterator is sent the value through its send(), as CPython does.
    ValuePtr method = delegate_method(tracer, receiver, "send");
    if (!method) {
      PyObject* type = receiver->python_type();
      std::string name = type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : receiver->repr();
      raise_error("attribute_error", PyExc_AttributeError, "'" + name + "' object has no attribute 'send'");
    }
    try {
      item = method->call(tracer, {sent}, {});
    } catch (const Raised& raised) {
      if (!raised.is_a(PyExc_StopIteration)) throw;
      result = raised.exception()->get_attr(tracer, "value");
    }
  }
  if (item) {
    frame.push(std::move(item));
    return;
  }
  auto effect = bytecode::stack_effect(inst.opcode, inst.arg, /*jump=*/true);
  if (!effect) throw InternalError("SEND without a stack effect in the opcode table");
  if (*effect < 0) frame.pop();
  frame.push(std::move(result));
  frame.jump_to(inst.target);
}

void end_send(Tracer&, FrameState& frame, const Instruction&) {
  ValuePtr value = frame.pop();
  frame.pop();  // the exhausted receiver
  frame.push(std::move(value));
}

// `with ctx:` — context managers the tracer models (grad modes, autocast, profilers: the
// value enters itself), and objects whose class defines __enter__ and __exit__ in Python
// (contextlib's helpers included): __enter__ is inlined, __exit__ pushed for the block's exits
// to call (with the exception, if one leaves the block).
void before_with(Tracer& tracer, FrameState& frame, const Instruction&) {
  ValuePtr context = frame.pop();
  if (auto entered = context->enter_with(tracer)) {
    frame.push(std::move(entered->first));
    frame.push(std::move(entered->second));
    return;
  }
  auto object = std::dynamic_pointer_cast<ObjectValue>(context);
  ValuePtr exit = object ? object->bound_special(tracer, "__exit__") : nullptr;
  if (!exit || !object->bound_special(tracer, "__enter__"))
    unsupported("unsupported_context", "`with` on " + context->repr());
  EnterMark before = mark_before_enter(tracer, context);
  ValuePtr entered = object->inline_special(tracer, "__enter__", {});
  exit = reenterable_exit(tracer, context, std::move(exit), std::move(before));
  frame.push(std::move(exit));
  frame.push(std::move(entered));
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
  table.add(op::GET_YIELD_FROM_ITER, get_yield_from_iter);
  table.add(op::SEND, send);
  table.add(Family::kEndSend, end_send);
  table.add(Family::kReturnConst, return_const);
}

}  // namespace bytegraph::trace
