#include "trace/plan_writer.h"

#include <algorithm>

namespace bytegraph::trace {

using codegen::OutputPlan;

OutputPlan PlanWriter::plan(const ValuePtr& value) {
  if (value->is_null()) return OutputPlan::null();
  // A value read from somewhere is read again: rebuilding a list, a module or an input
  // tensor would lose its identity.
  if (value->source()) return OutputPlan::of_source(value->source());
  if (auto* tensor_value = dynamic_cast<TensorValue*>(value.get())) return tensor(*tensor_value);
  if (value->is_constant()) return OutputPlan::of_constant(value->constant());
  require_single_reference(value);
  if (auto* seq = dynamic_cast<SequenceValue*>(value.get())) {
    OutputPlan plan;
    plan.items = plans_of(seq->items);
    if (seq->is_list()) {
      plan.kind = OutputPlan::Kind::List;
    } else if (seq->tuple_type) {
      plan.kind = OutputPlan::Kind::NamedTuple;
      plan.constant = named_tuple_constructor(seq->tuple_type.get());
    } else {
      plan.kind = OutputPlan::Kind::Tuple;
    }
    return plan;
  }
  if (auto* dict = dynamic_cast<DictValue*>(value.get())) return dict_plan(*dict);
  if (auto* iterator = dynamic_cast<IteratorValue*>(value.get())) {
    const size_t position = iterator->position();
    Args rest;
    while (ValuePtr item = iterator->next()) rest.push_back(std::move(item));
    iterator->set_position(position);  // describing must not advance the loop
    OutputPlan plan;
    plan.kind = OutputPlan::Kind::Iterator;
    plan.items = plans_of(rest);
    return plan;
  }
  if (auto* exit = dynamic_cast<GradModeExitValue*>(value.get())) {
    OutputPlan plan;
    plan.kind = OutputPlan::Kind::GradModeExit;
    plan.constant = py::Ref<>::newref(exit->previous() ? Py_True : Py_False);
    return plan;
  }
  if (auto* function = dynamic_cast<UserFunctionValue*>(value.get())) return make_function(*function);
  if (auto* method = dynamic_cast<BoundMethodValue*>(value.get())) {
    // `obj.method` for a user method: types.MethodType(function, obj) at run time.
    OutputPlan plan;
    plan.kind = OutputPlan::Kind::BoundMethod;
    plan.constant = check(PyImport_ImportModule("types"));
    plan.constant = check(PyObject_GetAttrString(plan.constant.get(), "MethodType"));
    if (method->function->source()) {
      plan.items.push_back(this->plan(method->function));
    } else if (PyObject* real = method->function->real_object()) {
      plan.items.push_back(OutputPlan::of_constant(real));
    } else {
      throw NotRestorable{value->repr()};
    }
    plan.items.push_back(this->plan(method->self));
    return plan;
  }
  if (auto [owner, name] = value->bound_attribute(); owner) {
    OutputPlan plan;
    plan.kind = OutputPlan::Kind::Attr;
    plan.items.push_back(this->plan(owner));
    plan.attribute = name;
    return plan;
  }
  throw NotRestorable{value->repr()};
}

std::vector<codegen::SideEffectPlan> PlanWriter::side_effects() {
  using Effect = codegen::SideEffectPlan;
  std::vector<Effect> effects;
  for (const ValuePtr& value : tracer_.side_effects.mutated()) {
    Effect effect;
    effect.target = OutputPlan::of_source(value->source());
    if (auto* seq = dynamic_cast<SequenceValue*>(value.get())) {
      effect.kind = Effect::Kind::ReplaceListItems;
      effect.value.kind = OutputPlan::Kind::List;
      effect.value.items = plans_of(seq->items);
    } else if (auto* dict = dynamic_cast<DictValue*>(value.get())) {
      effect.kind = Effect::Kind::ReplaceDictItems;
      effect.value = dict_plan(*dict);
    } else {
      throw NotRestorable{"changes to " + value->repr()};
    }
    effects.push_back(std::move(effect));
  }
  return effects;
}

OutputPlan PlanWriter::dict_plan(const DictValue& dict) {
  OutputPlan plan;
  plan.kind = OutputPlan::Kind::Dict;
  plan.keys = check(PyTuple_New(static_cast<Py_ssize_t>(dict.keys.size())));
  for (size_t i = 0; i < dict.keys.size(); ++i) {
    PyTuple_SET_ITEM(plan.keys.get(), i, dict.keys[i].copy().release());
    plan.items.push_back(this->plan(dict.values[i]));
  }
  return plan;
}

OutputPlan PlanWriter::tensor(const TensorValue& tensor) {
  // The graph's inputs and module tensors are read again where they came from: the very
  // tensor object comes back (an output of a compiled graph may be a new alias of it).
  if (tensor.source()) return OutputPlan::of_source(tensor.source());
  return OutputPlan::graph_output(output_index(tensor.node()));
}

// Each plan builds a new object: a list, dict, iterator or function made in the frame and
// reachable twice (two locals, a local and the loop) would become two objects.
void PlanWriter::require_single_reference(const ValuePtr& value) {
  const bool is_mutable = dynamic_cast<DictValue*>(value.get()) != nullptr ||
                          dynamic_cast<UserFunctionValue*>(value.get()) != nullptr ||
                          dynamic_cast<IteratorValue*>(value.get()) != nullptr ||
                          (dynamic_cast<SequenceValue*>(value.get()) != nullptr &&
                           static_cast<SequenceValue&>(*value).is_list());
  if (is_mutable && !made_here_.insert(value.get()).second)
    throw NotRestorable{value->repr() + ", which is referenced from two places"};
}

// A function made in this frame: MAKE_FUNCTION again, with this frame's globals and with its
// closure read from this frame's cells (LOAD_CLOSURE by name).
OutputPlan PlanWriter::make_function(const UserFunctionValue& function) {
  if (function.function || function.globals.get() != frame_.globals.get())
    throw NotRestorable{function.repr() + " (not made in this frame)"};
  constexpr int kDefaults = 0x01, kKwDefaults = 0x02, kClosure = 0x08;
  OutputPlan result;
  result.kind = OutputPlan::Kind::MakeFunction;
  result.constant = function.code.copy();
  result.index = 0;
  for (const ValuePtr& cell : function.closure) {
    std::string name = cell_name(cell);
    if (name.empty()) throw NotRestorable{function.repr() + ", whose closure is not this frame's"};
    result.names.push_back(name);
  }
  if (!function.defaults.empty()) {
    OutputPlan defaults;
    defaults.kind = OutputPlan::Kind::Tuple;
    defaults.items = plans_of(function.defaults);
    result.items.push_back(std::move(defaults));
    result.index |= kDefaults;
  }
  if (!function.kwdefaults.empty()) {
    OutputPlan kwdefaults;
    kwdefaults.kind = OutputPlan::Kind::Dict;
    kwdefaults.keys = check(PyTuple_New(static_cast<Py_ssize_t>(function.kwdefaults.size())));
    for (size_t i = 0; i < function.kwdefaults.size(); ++i) {
      PyTuple_SET_ITEM(kwdefaults.keys.get(), i, check(PyUnicode_FromString(function.kwdefaults[i].first.c_str())).release());
      kwdefaults.items.push_back(plan(function.kwdefaults[i].second));
    }
    result.items.push_back(std::move(kwdefaults));
    result.index |= kKwDefaults;
  }
  if (!result.names.empty()) result.index |= kClosure;
  return result;
}

// The name of this frame's cell or free variable that is `cell`, or "" if none is.
std::string PlanWriter::cell_name(const ValuePtr& cell) const {
  const auto& names = frame_.code->localsplus_names;
  for (size_t slot = 0; slot < frame_.locals.size() && slot < names.size(); ++slot)
    if (frame_.locals[slot] == cell) return names[slot];
  const size_t first_free = names.size() - std::min(names.size(), frame_.closure.size());
  for (size_t i = 0; i < frame_.closure.size(); ++i)
    if (frame_.closure[i] == cell && first_free + i < names.size()) return names[first_free + i];
  return "";
}

std::vector<OutputPlan> PlanWriter::plans_of(const Args& items) {
  std::vector<OutputPlan> plans;
  plans.reserve(items.size());
  for (const ValuePtr& item : items) plans.push_back(plan(item));
  return plans;
}

int PlanWriter::output_index(int node) {
  auto found = std::find(outputs_.begin(), outputs_.end(), node);
  if (found != outputs_.end()) return static_cast<int>(found - outputs_.begin());
  outputs_.push_back(node);
  return static_cast<int>(outputs_.size()) - 1;
}

}  // namespace bytegraph::trace
