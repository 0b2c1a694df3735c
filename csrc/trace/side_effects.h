// Objects that exist outside the trace (inputs, globals, attributes of modules and objects)
// and what the trace did to them.
//
// Each such mutable object gets one symbolic value, however it is reached (an object reached
// under two sources is guarded to stay one object), so a change made through one name is seen
// through every other. A change to one is made to its symbolic value (a list's items, a dict's
// entries, an object's attributes) and recorded here; generated code writes the final state
// back after the graph has run (codegen/side_effects.h). Both are rolled back with the
// instruction that made them.
#pragma once

#include <Python.h>

#include <unordered_map>
#include <utility>
#include <vector>

#include "python/ref.h"
#include "trace/value.h"

namespace bytegraph::trace {

class SideEffects {
 public:
  // The value already made for `real` in this trace, or null.
  ValuePtr known(PyObject* real) const;
  void remember(PyObject* real, ValuePtr value);

  // `value`, which came from outside the trace, changed: its final state is written back.
  void mark_mutated(const ValuePtr& value);
  const std::vector<ValuePtr>& mutated() const { return mutated_; }

  struct Mark {
    size_t objects = 0, mutated = 0;
  };
  Mark mark() const { return {order_.size(), mutated_.size()}; }
  void rollback(const Mark& mark);

 private:
  std::unordered_map<PyObject*, ValuePtr> by_object_;
  std::vector<py::Ref<>> order_;  // the objects in `by_object_`, kept alive, oldest first
  std::vector<ValuePtr> mutated_;
};

}  // namespace bytegraph::trace
