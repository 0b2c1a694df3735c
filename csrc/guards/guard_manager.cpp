#include "guards/guard_manager.h"

#include <algorithm>

#include "python/errors.h"

namespace bytegraph::guards {

GuardManager::GuardManager(SourcePtr source)
    : source_(std::move(source)), repr_(source_ ? source_->repr() : std::string("<frame>")) {}

void GuardManager::add_leaf(LeafPtr leaf) { leaves_.push_back(std::move(leaf)); }

void GuardManager::add_binding(SymbolBinding binding) { bindings_.push_back(binding); }

GuardManager& GuardManager::child_for(const SourcePtr& source) {
  std::string repr = source->repr();
  for (const auto& accessor : accessors_) {
    if (accessor->child().repr() == repr) return accessor->child();
  }
  accessors_.push_back(make_accessor(*source, std::make_unique<GuardManager>(source)));
  return accessors_.back()->child();
}

void GuardManager::finalize() {
  std::stable_sort(leaves_.begin(), leaves_.end(), [](const LeafPtr& a, const LeafPtr& b) {
    return a->cost_rank() < b->cost_rank();
  });
  // Any accessor below may run Python: a getattr can hit a property, a getitem __getitem__.
  may_run_python_ = !accessors_.empty();
  for (const LeafPtr& leaf : leaves_) may_run_python_ |= leaf->may_run_python();
  for (const auto& accessor : accessors_) accessor->child().finalize();
}

namespace {

void capture(PyObject* value, const std::vector<int>& slots, const FrameValues& frame) {
  for (int slot : slots) {
    if (frame.captured[slot] != nullptr) continue;  // one source, several relations
    Py_INCREF(value);
    frame.captured[slot] = value;
  }
}

}  // namespace

bool GuardManager::check(PyObject* value, const FrameValues& frame) const {
  for (const LeafPtr& leaf : leaves_) {
    if (!leaf->check(value)) return false;
  }
  for (const SymbolBinding& binding : bindings_) {
    if (!binding.bind(value, frame.symbol_values)) return false;
  }
  if (!captures_.empty()) capture(value, captures_, frame);
  for (const auto& accessor : accessors_) {
    if (!accessor->check(value, frame)) return false;
  }
  return true;
}

std::string GuardManager::explain(PyObject* value, const FrameValues& frame) const {
  for (const LeafPtr& leaf : leaves_) {
    try {
      if (!leaf->check(value)) return leaf->explain(value, repr_);
    } catch (PythonError& error) {
      if (error.is_interrupt()) throw;
      return leaf->describe(repr_) + " raised " + error.what();
    }
  }
  for (const SymbolBinding& binding : bindings_) {
    try {
      if (!binding.bind(value, frame.symbol_values)) return binding.explain(value, repr_);
    } catch (PythonError& error) {
      return binding.name(repr_) + " raised " + error.what();
    }
  }
  if (!captures_.empty()) capture(value, captures_, frame);
  for (const auto& accessor : accessors_) {
    std::string reason = accessor->explain(value, frame);
    if (!reason.empty()) return reason;
  }
  return {};
}

void GuardManager::describe(std::vector<std::pair<std::string, std::string>>& lines) const {
  for (const LeafPtr& leaf : leaves_) lines.emplace_back(repr_, leaf->describe(repr_));
  for (const auto& accessor : accessors_) accessor->child().describe(lines);
}

void GuardManager::traverse(py::Visitor& visit) const {
  // Leaves are shared with the GuardSet they came from (their designated owner while it
  // lives, see GuardSet::traverse) and other trees built from it; the source is shared with
  // the whole compile. A tree visits them only as their sole owner.
  for (const LeafPtr& leaf : leaves_)
    if (py::sole_owner(leaf)) leaf->traverse(visit);
  traverse_source(source_, visit);
  for (const auto& accessor : accessors_) accessor->traverse(visit);
}

size_t GuardManager::guard_count() const {
  size_t count = leaves_.size();
  for (const auto& accessor : accessors_) count += accessor->child().guard_count();
  return count;
}

}  // namespace bytegraph::guards
