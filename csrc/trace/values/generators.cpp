// Generators run a step at a time: see values/generators.h.
#include "trace/values/generators.h"

#include "trace/interpreter.h"
#include "trace/values/exceptions.h"

namespace bytegraph::trace {

namespace {

// Frames of generators resumed from generators (and inlined calls in between) count toward
// the same depth limit as inlined calls.
constexpr size_t kMaxFrames = 64;
// A generator consumed whole (tuple(gen), unpacking) is bounded: an infinite one breaks.
constexpr size_t kMaxItems = 10000;

}  // namespace

ValuePtr make_generator(Tracer& tracer, FrameState frame, const std::string& name) {
  frame.generator = true;
  auto generator = std::make_shared<GeneratorValue>(std::move(frame), name);
  std::weak_ptr<GeneratorValue> weak = generator;
  tracer.at_end.push_back([weak] {
    if (auto alive = weak.lock()) alive->release();
  });
  return generator;
}

std::string GeneratorValue::repr() const {
  return "GeneratorVariable(" + name_ + (finished_ ? ", finished" : "") + ")";
}

ValuePtr GeneratorValue::returned() const { return returned_ ? returned_ : ConstantValue::none(); }

ValuePtr GeneratorValue::next_item(Tracer& tracer) {
  if (finished_) return nullptr;
  if (running_) unsupported("generator", "generator " + name_ + " is already executing");
  if (tracer.frames.size() >= kMaxFrames) unsupported("recursion_limit", "resuming a generator deeper than 64 frames");
  tracer.journal.save(shared_from_this());
  running_ = true;
  struct Running {
    bool& flag;
    ~Running() { flag = false; }
  } running{running_};
  try {
    run_frame(tracer, frame_, nullptr);
  } catch (const Raised&) {
    // An exception leaving the generator's frame finishes it (the journal restores it on a
    // rollback).
    finished_ = true;
    frame_.stack.clear();
    throw;
  }
  if (frame_.yielded) {
    ValuePtr item = std::move(frame_.yielded);
    frame_.yielded = nullptr;
    return item;
  }
  finished_ = true;
  returned_ = std::move(frame_.result);
  frame_.result = nullptr;
  frame_.stack.clear();
  frame_.locals.clear();
  frame_.closure.clear();
  return nullptr;
}

std::optional<Args> GeneratorValue::unpack(Tracer& tracer) { return drain(tracer, *this); }

std::function<void()> GeneratorValue::saved_state() {
  struct Snapshot {
    Args stack, locals, closure;
    py::Ref<> kw_names;
    size_t pc;
    const bytecode::Instruction* current;
    ValuePtr result, yielded, returned;
    bool finished;
  };
  auto saved = std::make_shared<Snapshot>(Snapshot{frame_.stack, frame_.locals, frame_.closure, frame_.kw_names.copy(),
                                                   frame_.pc, frame_.current, frame_.result, frame_.yielded,
                                                   returned_, finished_});
  // The journal entry holds this value alive for as long as the closure can run.
  return [this, saved] {
    frame_.stack = saved->stack;
    frame_.locals = saved->locals;
    frame_.closure = saved->closure;
    frame_.kw_names = saved->kw_names.copy();
    frame_.pc = saved->pc;
    frame_.current = saved->current;
    frame_.result = saved->result;
    frame_.yielded = saved->yielded;
    returned_ = saved->returned;
    finished_ = saved->finished;
  };
}

void GeneratorValue::release() {
  frame_.stack.clear();
  frame_.locals.clear();
  frame_.closure.clear();
  frame_.result = nullptr;
  frame_.yielded = nullptr;
  returned_ = nullptr;
}

Args drain(Tracer& tracer, Value& iterator) {
  Args items;
  while (ValuePtr item = iterator.next_item(tracer)) {
    if (items.size() >= kMaxItems) unsupported("generator", "iterating more than 10000 items of " + iterator.repr());
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace bytegraph::trace
