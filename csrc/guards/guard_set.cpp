// GuardSet: guards collected per source, deduplicated; build() turns them into a tree with
// one manager per source, linked by accessors along each source's chain.
#include "guards/guard_set.h"

#include <algorithm>
#include <map>
#include <set>

#include "guards/guard_manager.h"
#include "guards/leaf_guard.h"
#include "python/errors.h"

namespace bytegraph::guards {

namespace {

class FrameGuardTree final : public GuardTree {
 public:
  FrameGuardTree() : root_(nullptr) {}
  GuardManager& root() { return root_; }

  bool check(const FrameValues& frame) const override { return root_.check(nullptr, frame); }
  std::string explain_failure(const FrameValues& frame) const override {
    return root_.explain(nullptr, frame);
  }
  std::vector<std::string> describe() const override {
    std::vector<std::pair<std::string, std::string>> lines;
    root_.describe(lines);
    std::stable_sort(lines.begin(), lines.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> text;
    for (auto& line : lines) text.push_back(std::move(line.second));
    return text;
  }
  size_t guard_count() const override { return root_.guard_count(); }

 private:
  GuardManager root_;
};

// The manager checking `source`, creating the managers of its bases on the way.
GuardManager& manager_for(GuardManager& root, const SourcePtr& source) {
  if (!source->base) return root.child_for(source);
  return manager_for(root, source->base).child_for(source);
}

}  // namespace

struct GuardSet::Impl {
  struct Entry {
    SourcePtr source;
    std::vector<LeafPtr> leaves;
    std::set<std::string> keys;  // dedupe keys of `leaves`
  };
  std::map<std::string, Entry> by_source;  // keyed by repr, so listings come out sorted
  std::vector<LeafPtr> global_state;       // checked on the root, before any source

  void add(const SourcePtr& source, LeafPtr leaf) {
    BYTEGRAPH_CHECK(source != nullptr, "a guard needs a source");
    Entry& entry = by_source[source->repr()];
    if (!entry.source) entry.source = source;
    if (entry.keys.insert(leaf->dedupe_key()).second) entry.leaves.push_back(std::move(leaf));
  }
};

GuardSet::GuardSet() : impl_(std::make_unique<Impl>()) {}
GuardSet::~GuardSet() = default;

void GuardSet::add_type_match(const SourcePtr& source, PyTypeObject* type) {
  impl_->add(source, make_type_match(type));
}
void GuardSet::add_id_match(const SourcePtr& source, PyObject* object) {
  impl_->add(source, make_id_match(object));
}
void GuardSet::add_equals_match(const SourcePtr& source, PyObject* value) {
  impl_->add(source, make_equals_match(value));
}
void GuardSet::add_tensor_match(const SourcePtr& source, PyObject* tensor) {
  impl_->add(source, make_tensor_match(tensor, {}));
}
void GuardSet::add_tensor_match(const SourcePtr& source, PyObject* tensor,
                                const std::vector<int>& dynamic_dims) {
  impl_->add(source, make_tensor_match(tensor, dynamic_dims));
}
void GuardSet::add_length_match(const SourcePtr& source, Py_ssize_t length) {
  impl_->add(source, make_length_match(length));
}
void GuardSet::add_dict_keys_match(const SourcePtr& source, PyObject* keys) {
  impl_->add(source, make_dict_keys_match(keys));
}
void GuardSet::add_none_match(const SourcePtr& source, bool is_none) {
  impl_->add(source, make_none_match(is_none));
}

void GuardSet::add_global_state_match(bool grad_enabled) {
  if (impl_->global_state.empty()) impl_->global_state.push_back(make_grad_mode_match(grad_enabled));
}

bool current_grad_mode() { return grad_mode_enabled_now(); }

std::vector<std::string> GuardSet::describe() const {
  std::vector<std::string> lines;
  for (const LeafPtr& leaf : impl_->global_state) lines.push_back(leaf->describe(""));
  for (const auto& [repr, entry] : impl_->by_source) {
    std::vector<LeafPtr> leaves = entry.leaves;
    std::stable_sort(leaves.begin(), leaves.end(), [](const LeafPtr& a, const LeafPtr& b) {
      return a->cost_rank() < b->cost_rank();
    });
    for (const LeafPtr& leaf : leaves) lines.push_back(leaf->describe(repr));
  }
  return lines;
}

std::unique_ptr<GuardTree> GuardSet::build() const {
  auto tree = std::make_unique<FrameGuardTree>();
  for (const LeafPtr& leaf : impl_->global_state) tree->root().add_leaf(leaf);
  for (const auto& [repr, entry] : impl_->by_source) {
    GuardManager& manager = manager_for(tree->root(), entry.source);
    for (const LeafPtr& leaf : entry.leaves) manager.add_leaf(leaf);
  }
  tree->root().finalize();
  return tree;
}

size_t GuardSet::size() const {
  size_t count = impl_->global_state.size();
  for (const auto& [repr, entry] : impl_->by_source) count += entry.leaves.size();
  return count;
}

}  // namespace bytegraph::guards
