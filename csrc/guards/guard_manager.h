// A node of the guard tree: the leaf checks on one value, then the accessors to the values
// derived from it. The root manager has no value of its own; its accessors read the frame.
#pragma once

#include <Python.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "guards/accessor.h"
#include "guards/guard_set.h"
#include "guards/leaf_guard.h"
#include "guards/shape_guard.h"
#include "guards/source.h"

namespace bytegraph::guards {

class GuardManager {
 public:
  explicit GuardManager(SourcePtr source);  // null for the root
  GuardManager(const GuardManager&) = delete;
  GuardManager& operator=(const GuardManager&) = delete;

  // Building (not thread-safe, not on the hot path).
  void add_leaf(LeafPtr leaf);
  // Reads one of this value's sizes/strides (or the int itself) for the shape guards; runs
  // after the leaves, so the value already passed its type and tensor checks.
  void add_binding(SymbolBinding binding);
  // Stores this manager's value (a new reference) in the check's captured slot `slot`, once
  // its own leaves passed, for the relational guards.
  void add_capture(int slot) { captures_.push_back(slot); }
  // The manager for `source`, whose base is this manager's source (or which is a root
  // source, for the root manager); created with its accessor on first use.
  GuardManager& child_for(const SourcePtr& source);
  // Orders leaves cheapest first (stable, so equal-cost leaves keep their insertion order).
  void finalize();

  // Hot path: leaves first, then each accessor's subtree; stops at the first failure.
  bool check(PyObject* value, const FrameValues& frame) const;
  // Same walk, same order; the first failure in words, or empty.
  std::string explain(PyObject* value, const FrameValues& frame) const;
  // (source, line) for every leaf in this subtree.
  void describe(std::vector<std::pair<std::string, std::string>>& lines) const;
  size_t guard_count() const;
  // Visits the Python objects this subtree owns alone (python/gc.h).
  void traverse(py::Visitor& visit) const;

  const std::string& repr() const { return repr_; }
  // Whether checking this subtree can run Python code (set by finalize()).
  bool may_run_python() const { return may_run_python_; }

 private:
  SourcePtr source_;
  std::string repr_;
  std::vector<LeafPtr> leaves_;
  std::vector<SymbolBinding> bindings_;
  std::vector<int> captures_;
  std::vector<std::unique_ptr<Accessor>> accessors_;
  bool may_run_python_ = false;
};

}  // namespace bytegraph::guards
