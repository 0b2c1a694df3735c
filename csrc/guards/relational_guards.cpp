#include "guards/relational_guards.h"

#include <algorithm>
#include <unordered_set>

namespace bytegraph::guards {

namespace {

class SameObject final : public RelationalGuard {
 public:
  SameObject(int first, int second) : first_(first), second_(second) {}
  bool check(PyObject* const* captured) const override { return captured[first_] == captured[second_]; }
  std::string explain(PyObject* const* captured, const std::vector<std::string>& names) const override {
    if (check(captured)) return {};
    return names[second_] + " is " + names[first_] + ": expected the same object, got two different ones";
  }
  std::string describe(const std::vector<std::string>& names) const override {
    return names[second_] + ": OBJECT_ALIASING " + names[first_];
  }

 private:
  int first_, second_;
};

class DistinctObjects final : public RelationalGuard {
 public:
  explicit DistinctObjects(std::vector<int> slots) : slots_(std::move(slots)) {}
  bool check(PyObject* const* captured) const override { return first_alias(captured) < 0; }
  std::string explain(PyObject* const* captured, const std::vector<std::string>& names) const override {
    int at = first_alias(captured);
    if (at < 0) return {};
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (static_cast<int>(i) != at && captured[slots_[i]] == captured[slots_[at]])
        return names[slots_[at]] + " is " + names[slots_[i]] +
               ": expected distinct objects (the graph was traced with them unaliased)";
    }
    return {};
  }
  std::string describe(const std::vector<std::string>& names) const override {
    std::string text = "NO_ALIASING";
    for (size_t i = 0; i < slots_.size(); ++i) text += (i ? ", " : " ") + names[slots_[i]];
    return text;
  }

 private:
  // The position (in slots_) of a value equal to an earlier one, or -1. A few inputs are the
  // common case: a quadratic scan without allocation beats hashing there.
  int first_alias(PyObject* const* captured) const {
    const size_t n = slots_.size();
    for (size_t i = 1; i < n; ++i) {
      PyObject* value = captured[slots_[i]];
      for (size_t j = 0; j < i; ++j)
        if (captured[slots_[j]] == value) return static_cast<int>(i);
    }
    return -1;
  }

  std::vector<int> slots_;
};

}  // namespace

std::unique_ptr<RelationalGuard> make_same_object(int first, int second) {
  return std::make_unique<SameObject>(first, second);
}

std::unique_ptr<RelationalGuard> make_distinct_objects(std::vector<int> slots) {
  return std::make_unique<DistinctObjects>(std::move(slots));
}

}  // namespace bytegraph::guards
