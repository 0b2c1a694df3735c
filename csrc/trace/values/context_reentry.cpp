#include "trace/values/context_reentry.h"

#include <algorithm>

#include "trace/plan_writer.h"

namespace bytegraph::trace {

namespace {

// The real object a constructor argument stands for, made again from constants (a new list,
// tuple or str-keyed dict each time) or the existing object it was read as; null when the
// value has no such object (a tensor, an object made in the trace).
py::Ref<> real_argument(const ValuePtr& value) {
  if (value->is_constant()) return py::Ref<>::newref(value->constant());
  if (value->is_tensor()) return {};
  if (auto* sequence = dynamic_cast<const SequenceValue*>(value.get())) {
    if (sequence->python_type() != (PyObject*)&PyList_Type && sequence->python_type() != (PyObject*)&PyTuple_Type)
      return {};
    py::Ref<> items = check(PyList_New(0));
    for (const ValuePtr& item : sequence->items) {
      py::Ref<> real = real_argument(item);
      if (!real || PyList_Append(items.get(), real.get()) < 0) return {};
    }
    return sequence->is_list() ? std::move(items) : check(PyList_AsTuple(items.get()));
  }
  if (auto* dict = dynamic_cast<const DictValue*>(value.get())) {
    py::Ref<> made = check(PyDict_New());
    for (size_t i = 0; i < dict->keys.size(); ++i) {
      py::Ref<> real = real_argument(dict->values[i]);
      if (!PyUnicode_CheckExact(dict->keys[i].get()) || !real) return {};
      check_status(PyDict_SetItem(made.get(), dict->keys[i].get(), real.get()));
    }
    return made;
  }
  // An object made in the trace, or one the trace wrote to (the real one lacks the writes yet).
  if (auto* object = dynamic_cast<const ObjectValue*>(value.get()); object && (object->is_new() || !object->attrs.empty()))
    return {};
  if (PyObject* real = value->real_object()) return py::Ref<>::newref(real);
  return {};
}

// functools.partial(cls, *args, **kwargs) for the object's construction, or null.
py::Ref<> factory_of(const ObjectValue& object) {
  if (!object.construction) return {};
  py::Ref<> arguments = check(PyList_New(0));
  check_status(PyList_Append(arguments.get(), object.python_type()));
  for (const ValuePtr& arg : object.construction->args) {
    py::Ref<> real = real_argument(arg);
    if (!real) return {};
    check_status(PyList_Append(arguments.get(), real.get()));
  }
  py::Ref<> keywords = check(PyDict_New());
  for (const auto& [name, arg] : object.construction->kwargs) {
    py::Ref<> real = real_argument(arg);
    if (!real) return {};
    check_status(PyDict_SetItemString(keywords.get(), name.c_str(), real.get()));
  }
  static PyObject* partial = [] {  // leaked: lives as long as the interpreter
    py::Ref<> functools = check(PyImport_ImportModule("functools"));
    return check(PyObject_GetAttrString(functools.get(), "partial")).release();
  }();
  py::Ref<> positional = check(PyList_AsTuple(arguments.get()));
  return check(PyObject_Call(partial, positional.get(), keywords.get()));
}

// Attributes written since the constructor returned (made again, the object would lack them),
// or torch state switched since (made again, its constructor could read another state).
bool changed_since_made(const Tracer& tracer, const ObjectValue& object) {
  if (tracer.torch_state_before.size() != object.construction->state_switches ||
      tracer.grad_modes_before.size() != object.construction->grad_switches)
    return true;
  const auto& now = object.attrs;
  const auto& then = object.construction->attrs;
  return now.size() != then.size() ||
         !std::equal(now.begin(), now.end(), then.begin(), [](const auto& a, const auto& b) {
           return a.first == b.first && a.second.get() == b.second.get();
         });
}

}  // namespace

EnterMark mark_before_enter(const Tracer& tracer, const ValuePtr& context) {
  SideEffects::Mark effects = tracer.side_effects.mark();
  auto* object = dynamic_cast<const ObjectValue*>(context.get());
  const bool as_made = object != nullptr && object->is_new() && object->construction && !changed_since_made(tracer, *object);
  return {tracer.graph.size(), tracer.torch_state_before.size(), tracer.grad_modes_before.size(), effects.mutated,
          effects.globals, as_made, as_made || !context ? torch_state_now(tracer) : py::Ref<>()};
}

ValuePtr ReenterableExitValue::call(Tracer& tracer, const Args& args, const KwArgs& kwargs) {
  return exit_->call(tracer, args, kwargs);
}

std::optional<codegen::OutputPlan> ReenterableExitValue::remake(PlanWriter&) {
  if (!not_reenterable.empty()) throw NotRestorable{repr() + " (" + not_reenterable + ")"};
  codegen::OutputPlan plan;
  plan.kind = codegen::OutputPlan::Kind::ContextExit;
  plan.constant = factory_.copy();
  return plan;
}

ValuePtr reenterable_exit(Tracer& tracer, const ValuePtr& context, ValuePtr exit, EnterMark before) {
  if (!before.as_made) return exit;
  EnterMark after = mark_before_enter(tracer);
  const size_t switches = (after.state_switches - before.state_switches) + (after.grad_switches - before.grad_switches);
  // Nothing but the switches recorded, and nothing outside the trace changed.
  if (after.graph_length - before.graph_length != switches || after.mutated != before.mutated ||
      after.globals != before.globals)
    return exit;
  py::Ref<> factory = factory_of(static_cast<const ObjectValue&>(*context));
  if (!factory) return exit;
  return std::make_shared<ReenterableExitValue>(std::move(exit), std::move(factory), std::move(before), std::move(after));
}

void leave_reenterable_blocks(Tracer& tracer, const FrameState& frame) {
  std::vector<ReenterableExitValue*> open;
  for (const ValuePtr& value : frame.stack)
    if (auto* exit = dynamic_cast<ReenterableExitValue*>(value.get())) open.push_back(exit);
  if (open.empty()) return;
  // Each block was entered in the state the block around it left after its enter, and the state
  // at the break is the one the innermost enter left: putting back the state before the
  // outermost enter (whatever was switched since) leaves exactly the state outside the blocks,
  // and entering them again from there makes the state at the break.
  std::string why;
  for (size_t i = 0; i < open.size() && why.empty(); ++i) {
    py::Ref<> next = i + 1 < open.size() ? open[i + 1]->before().state.copy() : torch_state_now(tracer);
    if (PyObject_RichCompareBool(open[i]->after().state.get(), next.get(), Py_EQ) != 1)
      why = "torch state was switched inside the block before the break";
  }
  if (!why.empty()) {
    for (ReenterableExitValue* exit : open) exit->not_reenterable = why;
    return;
  }
  const EnterMark& outermost = open.front()->before();
  std::vector<StateBefore> switched;  // copied: recording the restores adds to the tracer's list
  for (size_t i = tracer.torch_state_before.size(); i-- > outermost.state_switches;) {
    const StateBefore& entry = tracer.torch_state_before[i];
    switched.push_back({entry.state, entry.restore.copy(), entry.value.copy()});
  }
  for (const StateBefore& entry : switched) record_state_restore(tracer, entry);
  if (tracer.grad_modes_before.size() > outermost.grad_switches)
    record_set_grad_enabled(tracer, tracer.grad_modes_before[outermost.grad_switches]);
}

}  // namespace bytegraph::trace
