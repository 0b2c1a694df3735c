#include "trace/side_effects.h"

#include <algorithm>

namespace bytegraph::trace {

ValuePtr SideEffects::known(PyObject* real) const {
  auto found = by_object_.find(real);
  return found == by_object_.end() ? nullptr : found->second;
}

void SideEffects::remember(PyObject* real, ValuePtr value) {
  if (by_object_.emplace(real, std::move(value)).second) order_.push_back(py::Ref<>::newref(real));
}

void SideEffects::mark_mutated(const ValuePtr& value) {
  if (std::find(mutated_.begin(), mutated_.end(), value) == mutated_.end()) mutated_.push_back(value);
}

void SideEffects::rollback(const Mark& mark) {
  while (order_.size() > mark.objects) {
    by_object_.erase(order_.back().get());
    order_.pop_back();
  }
  mutated_.resize(std::min(mutated_.size(), mark.mutated));
}

}  // namespace bytegraph::trace
