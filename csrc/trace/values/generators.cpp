// Generators run a step at a time: see values/generators.h.
#include "trace/values/generators.h"
#include "trace/plan_writer.h"

#include "bytecode/opcodes.h"
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

ValuePtr make_generator(Tracer& tracer, FrameState frame, const UserFunctionValue& function, const Args& args,
                        const KwArgs& kwargs) {
  frame.generator = true;
  auto generator = std::make_shared<GeneratorValue>(std::move(frame), function.name);
  if (auto owner = std::const_pointer_cast<Value>(function.weak_from_this().lock())) generator->made_by(owner, args, kwargs);
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

ValuePtr GeneratorValue::next_item(Tracer& tracer) { return resume(tracer, nullptr, nullptr); }

bool GeneratorValue::delegating() const {
  // The instruction it resumes at is RESUME with argument 2: "after yield from".
  if (finished_ || frame_.pc == 0 || frame_.pc >= frame_.code->instructions.size()) return false;
  const bytecode::Instruction& next = *frame_.code->instructions[frame_.pc];
  return next.opcode == bytecode::op::RESUME && next.arg == 2;
}

ValuePtr GeneratorValue::delegate() const {
  // Suspended at the yield inside the SEND loop: [..., delegate, what the yield evaluates to].
  if (!delegating() || frame_.stack.size() < 2) throw InternalError("the delegate of a generator not in `yield from`");
  return frame_.stack[frame_.stack.size() - 2];
}

ValuePtr delegate_method(Tracer& tracer, const ValuePtr& delegate, const char* name) {
  if (!dynamic_cast<ObjectValue*>(delegate.get())) {
    // A built-in iterator: its type says.
    PyObject* type = delegate->python_type();
    if (type == nullptr) unsupported("generator", std::string(name) + "() of " + delegate->repr() + " delegated to by `yield from`");
    if (!PyObject_HasAttrString(type, name)) return nullptr;
    unsupported("generator", std::string(name) + "() of " + delegate->repr() + " delegated to by `yield from`");
  }
  try {
    return delegate->get_attr(tracer, name);
  } catch (const Raised& raised) {
    if (raised.is_a(PyExc_AttributeError)) return nullptr;
    throw;
  }
}

ValuePtr GeneratorValue::raise_at_delegation(Tracer& tracer, ValuePtr error) {
  if (!delegating() || frame_.stack.size() < 2) throw InternalError("raising at the delegation of a generator not in `yield from`");
  const auto& instructions = frame_.code->instructions;
  const bytecode::Instruction& yield = *instructions.at(frame_.pc - 1);
  const bool cleanup = yield.exception_entry && yield.exception_entry->target &&
                       bytecode::opcode_info(yield.exception_entry->target->opcode).family == bytecode::Family::kCleanupThrow;
  if (!cleanup) {
    // Code without a CLEANUP_THROW handler around the yield (3.11): CPython's gen_throw ends
    // the `yield from` itself, as the SEND loop does when the delegate finishes.
    tracer.journal.save(shared_from_this());
    const bytecode::Instruction& send = *instructions.at(frame_.pc + 1)->target;
    auto effect = bytecode::stack_effect(send.opcode, send.arg, /*jump=*/true);
    if (!effect) throw InternalError("SEND without a stack effect in the opcode table");
    frame_.stack.pop_back();  // what the yield would have evaluated to
    if (*effect < 0) frame_.stack.pop_back();  // the delegate
    frame_.jump_to(send.target);
    if (is_instance_of(*error, PyExc_StopIteration)) {
      frame_.stack.push_back(error->get_attr(tracer, "value"));
      return resume(tracer, nullptr, nullptr);
    }
  }
  return resume(tracer, nullptr, std::move(error));
}

void GeneratorValue::finish() {
  finished_ = true;
  frame_.stack.clear();
  frame_.locals.clear();
  frame_.closure.clear();
}

ValuePtr GeneratorValue::resume(Tracer& tracer, ValuePtr sent, ValuePtr thrown) {
  if (finished_) return nullptr;
  if (running_) unsupported("generator", "generator " + name_ + " is already executing");
  if (tracer.frames.size() >= kMaxFrames) unsupported("recursion_limit", "resuming a generator deeper than 64 frames");
  tracer.journal.save(shared_from_this());
  if (sent && started()) frame_.stack.back() = std::move(sent);  // what the yield evaluates to
  frame_.thrown = std::move(thrown);
  running_ = true;
  struct Running {
    bool& flag;
    ~Running() { flag = false; }
  } running{running_};
  try {
    run_frame(tracer, frame_, nullptr);
  } catch (const Raised& raised) {
    // An exception leaving the generator's frame finishes it (the journal restores it on a
    // rollback). A StopIteration becomes a RuntimeError (PEP 479; 3.12+ does it in the frame).
    finish();
    ValuePtr replaced = stop_iteration_error(raised.exception());
    if (replaced != raised.exception()) throw Raised(replaced, raised.kind(), "generator raised StopIteration", true);
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

namespace {

// gen.send / gen.throw / gen.close / gen.__next__, bound to the generator.
class GeneratorMethodValue : public Value {
 public:
  GeneratorMethodValue(std::shared_ptr<GeneratorValue> generator, std::string name)
      : generator_(std::move(generator)), name_(std::move(name)) {}
  std::string repr() const override { return "GetAttrVariable(" + generator_->repr() + ", " + name_ + ")"; }
  std::pair<ValuePtr, std::string> bound_attribute() const override { return {generator_, name_}; }
  // gen.send.__name__ and friends (unittest's assertRaises(E, gen.send, v) reads it).
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override {
    return builtin_method_attribute(tracer, generator_, name_, name);
  }

  ValuePtr call(Tracer& tracer, const Args& args, const KwArgs& kwargs) override {
    if (!kwargs.empty()) raise_error("bad_call", PyExc_TypeError, name_ + "() takes no keyword arguments");
    if (name_ == "__next__" && args.empty()) return item_or_stop(tracer, generator_->resume(tracer, nullptr, nullptr));
    if (name_ == "send" && args.size() == 1) {
      const bool none = args[0]->is_constant() && args[0]->constant() == Py_None;
      if (!generator_->started() && !generator_->finished() && !none)
        raise_error("python_error", PyExc_TypeError, "can't send non-None value to a just-started generator");
      return item_or_stop(tracer, generator_->resume(tracer, args[0], nullptr));
    }
    if (name_ == "throw" && !args.empty() && args.size() <= 3) return throw_in(tracer, args);
    if (name_ == "close" && args.empty()) return close(tracer);
    raise_error("bad_call", PyExc_TypeError, name_ + "() got " + std::to_string(args.size()) + " arguments");
  }

 private:
  ValuePtr item_or_stop(Tracer&, ValuePtr item) {
    if (item) return item;
    ValuePtr returned = generator_->returned();
    raise_error("stop_iteration", PyExc_StopIteration, returned->is_constant() && returned->constant() == Py_None ? nullptr : returned);
  }

  // throw(exception) / throw(type[, value[, traceback]]).
  ValuePtr throw_in(Tracer& tracer, const Args& args) {
    ValuePtr exception = args[0];
    if (PyObject* real = exception->real_object(); real != nullptr && PyType_Check(real)) {
      Args constructor_args;
      if (args.size() >= 2 && !(args[1]->is_constant() && args[1]->constant() == Py_None)) {
        if (is_instance_of(*args[1], real)) exception = args[1];
        else constructor_args.push_back(args[1]);
      }
      if (exception == args[0]) exception = exception->call(tracer, constructor_args, {});
    }
    if (!is_exception(*exception))
      raise_error("python_error", PyExc_TypeError, "exceptions must be classes or instances deriving from BaseException");
    if (!generator_->started() || generator_->finished()) {
      generator_->finish();
      reraise(exception);
    }
    if (generator_->delegating()) return throw_delegating(tracer, std::move(exception));
    return item_or_stop(tracer, generator_->resume(tracer, nullptr, exception));
  }

  // throw() into a generator suspended in `yield from` goes to the delegate first, as CPython's
  // gen_throw does: GeneratorExit closes the delegate, then is raised here; another exception
  // is thrown into the delegate, whose next item is this generator's, and whatever the
  // delegate's throw() raises (its StopIteration included) is raised where this generator
  // delegates.
  ValuePtr throw_delegating(Tracer& tracer, ValuePtr exception) {
    if (is_instance_of(*exception, PyExc_GeneratorExit))
      return item_or_stop(tracer, generator_->resume(tracer, nullptr, close_delegate(tracer, exception)));
    ValuePtr delegate = generator_->delegate();
    auto subgenerator = std::dynamic_pointer_cast<GeneratorValue>(delegate);
    ValuePtr method = subgenerator ? nullptr : delegate_method(tracer, delegate, "throw");
    // Without a throw() of its own, the exception is raised where this generator delegates.
    if (!subgenerator && !method) return item_or_stop(tracer, generator_->resume(tracer, nullptr, exception));
    ValuePtr raised_by_delegate;
    try {
      if (subgenerator) return GeneratorMethodValue(subgenerator, "throw").throw_in(tracer, {exception});
      return method->call(tracer, {exception}, {});
    } catch (const Raised& raised) {
      raised_by_delegate = raised.exception();
    }
    return item_or_stop(tracer, generator_->raise_at_delegation(tracer, std::move(raised_by_delegate)));
  }

  // Closes the delegate of a generator suspended in `yield from` (when it has a close()): what
  // is then raised in the generator, `exit` or the exception the delegate's close() raised.
  ValuePtr close_delegate(Tracer& tracer, ValuePtr exit) {
    ValuePtr delegate = generator_->delegate();
    try {
      if (auto subgenerator = std::dynamic_pointer_cast<GeneratorValue>(delegate))
        GeneratorMethodValue(subgenerator, "close").close(tracer);
      else if (ValuePtr method = delegate_method(tracer, delegate, "close"))
        method->call(tracer, {}, {});
    } catch (const Raised& raised) {
      return raised.exception();
    }
    return exit;
  }

  ValuePtr close(Tracer& tracer) {
    if (!generator_->started() || generator_->finished()) {
      generator_->finish();
      return ConstantValue::none();
    }
    ValuePtr exit = make_exception(tracer, PyExc_GeneratorExit, {}, {});
    // A delegate is closed first; an exception its close() raises is raised here instead.
    ValuePtr raised_here = generator_->delegating() ? close_delegate(tracer, exit) : exit;
    try {
      if (generator_->resume(tracer, nullptr, raised_here))
        raise_error("python_error", PyExc_RuntimeError, "generator ignored GeneratorExit");
    } catch (const Raised& raised) {
      if (raised.exception() == exit || raised.is_a(PyExc_StopIteration)) return ConstantValue::none();
      throw;
    }
    return ConstantValue::none();
  }

  std::shared_ptr<GeneratorValue> generator_;
  std::string name_;
};

}  // namespace

ValuePtr GeneratorValue::get_attr(Tracer& tracer, const std::string& name) {
  if (name == "send" || name == "throw" || name == "close" || name == "__next__")
    return std::make_shared<GeneratorMethodValue>(std::static_pointer_cast<GeneratorValue>(shared_from_this()), name);
  return Value::get_attr(tracer, name);
}

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

void GeneratorValue::made_by(ValuePtr function, Args args, KwArgs kwargs) {
  function_ = std::move(function);
  args_ = std::move(args);
  kwargs_ = std::move(kwargs);
}

std::optional<codegen::OutputPlan> GeneratorValue::remake(PlanWriter& writer) {
  if (started() || finished_ || running_ || !function_)
    throw NotRestorable{repr() + ", which has run: its frame cannot be made again"};
  return writer.call(function_, args_, kwargs_);
}

void GeneratorValue::release() {
  function_ = nullptr;
  args_.clear();
  kwargs_.clear();
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
