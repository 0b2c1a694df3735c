// Guards over several values at once: "these two sources are the same object" and "these
// sources are pairwise distinct objects". A trace that found one object under two sources
// (the same tensor passed twice, a list reached through two attributes) is only valid while
// that stays true, and a graph that treats two tensor inputs as unaliased is only valid while
// they are not one tensor.
//
// The tree walk captures each participating value once (a strong reference in a per-check
// slot array owned by the tree's check, so concurrent checks share nothing); the relations are
// evaluated after every per-source guard passed.
#pragma once

#include <Python.h>

#include <memory>
#include <string>
#include <vector>

namespace bytegraph::guards {

class RelationalGuard {
 public:
  virtual ~RelationalGuard() = default;
  // `captured`: the slot array of one check, every slot of this relation filled.
  virtual bool check(PyObject* const* captured) const = 0;
  // Why it fails, naming the sources; empty when it passes.
  virtual std::string explain(PyObject* const* captured, const std::vector<std::string>& names) const = 0;
  virtual std::string describe(const std::vector<std::string>& names) const = 0;
};

// slots: indices into the captured array.
std::unique_ptr<RelationalGuard> make_same_object(int first, int second);
std::unique_ptr<RelationalGuard> make_distinct_objects(std::vector<int> slots);

}  // namespace bytegraph::guards
