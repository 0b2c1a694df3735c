// `with` blocks whose context generated code can enter again at a graph break inside them.
//
// A break inside a `with` block splits the frame: the breaking instruction runs for real
// between the graph and the resume function, which continues inside the block. For that,
// generated code must leave the block's effect as the graph left it, run the instruction
// inside the block, and the resume function must enter the block again (so its own trace
// records the enter and the exit). That is possible when the context is a new object made from
// constants (a class called with constant arguments: `@contextmanager` functions make one,
// `_GeneratorContextManager(func, args, kwds)`) whose __enter__ only switched torch state the
// tracer models (grad mode, saved-tensors hooks, attention backends: values/state_switch.h):
// calling the class again from the state outside the block makes the same block again.
//
// At the break, the graph ends by putting back the state outside the open blocks (as
// torch.compile's graphs do); generated code then enters a fresh context for the breaking
// instruction and exits it before the resume call, and the resume function's prologue enters
// another one, whose exit its block runs.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// What the tracer had recorded when a `with` block's __enter__ started, and whether the
// context was then a new object as its constructor left it.
struct EnterMark {
  size_t graph_length, state_switches, grad_switches, mutated, globals;
  bool as_made = false;
  py::Ref<> state;  // torch_state_now() then (only where the context qualifies)
};
EnterMark mark_before_enter(const Tracer& tracer, const ValuePtr& context = nullptr);

// The __exit__ of a block whose context can be made again: calls go to `exit`; at a break it is
// planned as re-entering the block by calling `factory` (a constant taking no arguments).
class ReenterableExitValue : public Value {
 public:
  ReenterableExitValue(ValuePtr exit, py::Ref<> factory, EnterMark before, EnterMark after)
      : exit_(std::move(exit)), factory_(std::move(factory)), before_(std::move(before)), after_(std::move(after)) {}
  std::string repr() const override { return "ReenterableExit(" + exit_->repr() + ")"; }
  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override;
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;

  const EnterMark& before() const { return before_; }
  const EnterMark& after() const { return after_; }
  // Set at a break where the block cannot be entered again, with why.
  std::string not_reenterable;

 private:
  ValuePtr exit_;
  py::Ref<> factory_;
  EnterMark before_, after_;
};

// `exit` (the block's __exit__, bound to `context`) as a ReenterableExitValue when the block's
// __enter__ (run since `before`) qualifies; otherwise `exit` itself.
ValuePtr reenterable_exit(Tracer& tracer, const ValuePtr& context, ValuePtr exit, EnterMark before);

// At a break in the outermost frame: when the blocks open there can all be entered again, the
// graph ends by putting back the state outside them; otherwise they are marked as not.
void leave_reenterable_blocks(Tracer& tracer, const FrameState& frame);

}  // namespace bytegraph::trace
