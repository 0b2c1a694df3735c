// Plans (codegen/output_plan.h) for symbolic values: how generated code rebuilds, after the
// graph has run, a value the trace holds (the return value, or the stack, locals and cells at
// a graph break).
//
// A value read from somewhere is re-read from there (its source), so it keeps its identity:
// inputs, globals, attributes, and the graph's own inputs passed through. Tensors the graph
// computed are graph outputs (their node indices are appended to `outputs`), constants are
// constants, containers made in the frame are rebuilt item by item.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/output_plan.h"
#include "codegen/side_effects.h"
#include "trace/tracer.h"
#include "trace/values/sets.h"

namespace bytegraph::trace {

// A value generated code cannot rebuild: the frame is not split (or the return fails).
struct NotRestorable {
  std::string why;
  // A list made in the trace that a second plan reached: planned again with it shared, the
  // plans can hold it (PlanWriter::share_list).
  ValuePtr shared_list = nullptr;
};

class PlanWriter {
 public:
  // `frame`: the outermost frame (functions made in it are made again from its cells).
  PlanWriter(Tracer& tracer, const FrameState& frame, std::vector<int>& outputs)
      : tracer_(tracer), frame_(frame), outputs_(outputs) {}

  // Throws NotRestorable.
  codegen::OutputPlan plan(const ValuePtr& value);
  // `function(*arguments, **keywords)` at run time, each part planned (Value::remake's calls).
  codegen::OutputPlan call(const ValuePtr& function, const Args& arguments, const KwArgs& keywords = {});
  // `callable(*arguments)` for a callable that is the same object every run (map, zip).
  codegen::OutputPlan call(PyObject* callable, const Args& arguments);
  // The trace being written (what a value's remake may ask of it).
  Tracer& tracer() { return tracer_; }
  // The remaking of the container and function kinds (their Value::remake): each item planned.
  std::vector<codegen::OutputPlan> plans_of(const Args& items);
  codegen::OutputPlan remake_dict(const DictValue& dict);
  codegen::OutputPlan remake_set(SetValue& set);
  // A list iterator over a list generated code also makes: an iterator of that list, at its position.
  codegen::OutputPlan live_list_iterator(const IteratorValue& iterator);
  codegen::OutputPlan make_function(UserFunctionValue& function);
  // A list made in the trace that more than one plan may refer to (a loop's iterator and a
  // local): generated code makes it once, as a new object, so it stays one list.
  void share_list(const ValuePtr& list) { shared_lists_.insert(list.get()); }
  // What generated code writes back to the objects from outside the trace that it changed
  // (Tracer::side_effects), in the order they were first changed. Throws NotRestorable.
  std::vector<codegen::SideEffectPlan> side_effects();
  // What generated code writes back to an object of a Python class (ObjectValue's
  // write_changes): its attributes, and a builtin base's items.
  void object_effects(ObjectValue& object, std::vector<codegen::SideEffectPlan>& effects);
  // When a plan made a function again that closes over this frame's cells: what the trace
  // stored in them, written before the frame returns (a returned closure reads them later).
  // Throws NotRestorable.
  void own_cell_effects(std::vector<codegen::SideEffectPlan>& effects);
  // The objects made in the trace that the plans written so far refer to (Temp(i) is the
  // i-th); call last.
  std::vector<codegen::OutputPlan> take_new_objects() { return std::move(new_objects_); }

 private:
  void require_single_reference(const ValuePtr& value);
  codegen::OutputPlan make_function_itself(const UserFunctionValue& function);
  std::string cell_name(const ValuePtr& cell) const;
  codegen::OutputPlan tensor(const TensorValue& tensor);
  codegen::OutputPlan new_object(ObjectValue& object);
  codegen::OutputPlan new_list(const SequenceValue& list);
  static codegen::OutputPlan temp(int index);
  void global_effects(std::vector<codegen::SideEffectPlan>& effects);
  int output_index(int node);

  Tracer& tracer_;
  const FrameState& frame_;
  std::vector<int>& outputs_;
  std::unordered_set<const Value*> made_here_;
  std::vector<codegen::OutputPlan> new_objects_;
  std::unordered_map<const Value*, int> temps_;
  std::unordered_set<const Value*> shared_lists_;
  bool made_closures_ = false;
};

}  // namespace bytegraph::trace
