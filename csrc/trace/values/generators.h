// Generators made by calling a generator function (genexprs included) in traced code.
#pragma once

#include <memory>
#include <string>

#include "trace/tracer.h"

namespace bytegraph::trace {

// A generator whose frame runs a step at a time: each item its consumer asks for resumes the
// frame up to the next yield, so whatever the generator and its consumer do in between (a
// list one appends to and the other reads, an early stop of any() or next()) happens in the
// order the real program does it. next(), send(), throw() and close() resume the frame as
// CPython does (a sent value is what the yield evaluates to; a thrown exception is raised at
// the yield).
class GeneratorValue : public Value {
 public:
  GeneratorValue(FrameState frame, std::string name) : frame_(std::move(frame)), name_(std::move(name)) {}
  // The call that made it: a generator nothing has resumed yet is made again by calling the
  // generator function the same way (none of its body has run).
  void made_by(ValuePtr function, Args args, KwArgs kwargs);
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;
  std::string repr() const override;
  PyObject* python_type() const override { return (PyObject*)&PyGen_Type; }
  bool truthy(Tracer&) const override { return true; }
  bool is_iterator() const override { return true; }
  ValuePtr next_item(Tracer& tracer) override;
  // gen.send, gen.throw, gen.close, gen.__next__.
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  // Resumes the frame with `sent` as the yield's value, or `thrown` raised at the yield: the
  // next item, or null once the generator returned.
  ValuePtr resume(Tracer& tracer, ValuePtr sent, ValuePtr thrown);
  bool started() const { return frame_.pc > 0; }
  // Suspended inside `yield from`: throw() and close() go to the subiterator first.
  bool delegating() const;
  // The iterator `yield from` delegates to (while delegating()).
  ValuePtr delegate() const;
  // Resumes a delegating generator with `error`, which the delegate's throw() raised, raised
  // where it delegates: a StopIteration ends the `yield from` with its value.
  ValuePtr raise_at_delegation(Tracer& tracer, ValuePtr error);
  bool finished() const { return finished_; }
  void finish();
  // The items not consumed yet (consuming them): tuple(gen), sum(gen), `a, b = gen`.
  std::optional<Args> unpack(Tracer& tracer) override;
  std::function<void()> saved_state() override;
  // What the generator function returned, once it has (`x = yield from gen`); None before.
  ValuePtr returned() const;
  // Drops the frame's values (the trace is over): a generator reachable from its own frame
  // would otherwise keep itself alive.
  void release();

 private:
  FrameState frame_;
  std::string name_;
  ValuePtr function_;
  Args args_;
  KwArgs kwargs_;
  bool finished_ = false;
  bool running_ = false;
  ValuePtr returned_;
};

// A method (send, throw, close) of an iterator `yield from` delegates to that is no
// generator, or null where it has none (CPython looks each up and goes without when absent).
ValuePtr delegate_method(Tracer& tracer, const ValuePtr& delegate, const char* name);

// What calling a generator function returns: a generator over its bound frame, not started.
ValuePtr make_generator(Tracer& tracer, FrameState frame, const UserFunctionValue& function, const Args& args,
                        const KwArgs& kwargs);

// The remaining items of an iterator (generators run, lazy iterators advanced), consuming
// them; more than 10000 is a break (an infinite generator).
Args drain(Tracer& tracer, Value& iterator);

}  // namespace bytegraph::trace
