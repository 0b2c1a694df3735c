// GuardSet: guards collected per source, deduplicated; build() turns them into a tree with
// one manager per source, linked by accessors along each source's chain.
#include "guards/guard_set.h"

#include <algorithm>
#include <map>
#include <set>

#include "guards/guard_manager.h"
#include "guards/leaf_guard.h"
#include "guards/relational_guards.h"
#include "python/errors.h"

namespace bytegraph::guards {

namespace {

// The captured-slot array of one check: on the stack for the usual handful of slots, every
// reference released when the check ends.
class CapturedValues {
 public:
  explicit CapturedValues(size_t count) : count_(count) {
    if (count_ > kInline) heap_.assign(count_, nullptr);
    slots_ = count_ > kInline ? heap_.data() : inline_;
    std::fill(slots_, slots_ + count_, nullptr);
  }
  ~CapturedValues() {
    for (size_t i = 0; i < count_; ++i) Py_XDECREF(slots_[i]);
  }
  PyObject** get() { return slots_; }
  bool complete() const {
    return std::none_of(slots_, slots_ + count_, [](PyObject* value) { return value == nullptr; });
  }

 private:
  static constexpr size_t kInline = 16;
  size_t count_;
  PyObject* inline_[kInline];
  std::vector<PyObject*> heap_;
  PyObject** slots_;
};

// The sizes and ints one check reads for the shape guards (shape_guard.h): on the stack for
// the usual handful.
class SymbolValues {
 public:
  explicit SymbolValues(size_t count) {
    if (count > kInline) heap_.resize(count);
  }
  int64_t* get() { return heap_.empty() ? inline_ : heap_.data(); }

 private:
  static constexpr size_t kInline = 16;
  int64_t inline_[kInline] = {};
  std::vector<int64_t> heap_;
};

class FrameGuardTree final : public GuardTree {
 public:
  explicit FrameGuardTree(ShapeGuards shape_guards) : root_(nullptr), shape_guards_(std::move(shape_guards)) {}
  GuardManager& root() { return root_; }
  void add_relation(std::unique_ptr<RelationalGuard> relation) { relations_.push_back(std::move(relation)); }
  void set_slot_names(std::vector<std::string> names) { slot_names_ = std::move(names); }

  bool check(const FrameValues& frame) const override {
    if (slot_names_.empty() && shape_guards_.empty()) return root_.check(nullptr, frame);
    CapturedValues captured(slot_names_.size());
    SymbolValues symbols(shape_guards_.slot_count());
    FrameValues with_slots = frame;
    with_slots.captured = captured.get();
    with_slots.symbol_values = symbols.get();
    if (!root_.check(nullptr, with_slots) || !captured.complete()) return false;
    for (const auto& relation : relations_)
      if (!relation->check(captured.get())) return false;
    return shape_guards_.check(symbols.get());
  }
  std::string explain_failure(const FrameValues& frame) const override {
    if (slot_names_.empty() && shape_guards_.empty()) return root_.explain(nullptr, frame);
    CapturedValues captured(slot_names_.size());
    SymbolValues symbols(shape_guards_.slot_count());
    FrameValues with_slots = frame;
    with_slots.captured = captured.get();
    with_slots.symbol_values = symbols.get();
    std::string reason = root_.explain(nullptr, with_slots);
    if (!reason.empty()) return reason;
    if (!captured.complete()) return "a value of a relational guard was not read";
    for (const auto& relation : relations_) {
      reason = relation->explain(captured.get(), slot_names_);
      if (!reason.empty()) return reason;
    }
    return shape_guards_.explain(symbols.get());
  }
  std::vector<std::string> describe() const override {
    std::vector<std::pair<std::string, std::string>> lines;
    root_.describe(lines);
    for (const auto& relation : relations_) {
      std::string line = relation->describe(slot_names_);
      lines.emplace_back(line, line);
    }
    std::stable_sort(lines.begin(), lines.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> text;
    for (auto& line : lines) text.push_back(std::move(line.second));
    for (auto& line : shape_guards_.describe()) text.push_back(std::move(line));
    return text;
  }
  size_t guard_count() const override { return root_.guard_count() + relations_.size() + shape_guards_.size(); }
  void traverse(py::Visitor& visit) const override { root_.traverse(visit); }

 private:
  GuardManager root_;
  ShapeGuards shape_guards_;
  std::vector<std::unique_ptr<RelationalGuard>> relations_;
  std::vector<std::string> slot_names_;  // the source captured in each slot
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
  // Relational guards, by the sources they relate (kept as sources until build()).
  std::vector<std::pair<SourcePtr, SourcePtr>> same_objects;
  std::vector<std::vector<SourcePtr>> distinct_objects;
  // Shape guards and the bindings that read their values (shape_guard.h).
  std::vector<std::pair<SourcePtr, SymbolBinding>> bindings;
  ShapeGuards shape_guards;

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
void GuardSet::add_value_match(const SourcePtr& source, PyObject* value) {
  impl_->add(source, make_value_match(value));
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
void GuardSet::add_set_match(const SourcePtr& source, PyObject* type, PyObject* members) {
  impl_->add(source, make_set_match(type, members));
}
void GuardSet::add_dict_keys_match(const SourcePtr& source, PyObject* keys) {
  impl_->add(source, make_dict_keys_match(keys));
}
void GuardSet::add_dict_lacks_key(const SourcePtr& source, PyObject* key) {
  impl_->add(source, make_dict_lacks_key(key));
}
void GuardSet::add_size_match(const SourcePtr& source, Py_ssize_t length) {
  impl_->add(source, make_size_match(length));
}
void GuardSet::add_lacks_attr(const SourcePtr& source, PyObject* name) {
  impl_->add(source, make_lacks_attr(name));
}
void GuardSet::add_subclass_metadata_match(const SourcePtr& source, PyObject* tensor, PyObject* compare) {
  impl_->add(source, make_subclass_metadata_match(tensor, compare));
}
void GuardSet::add_none_match(const SourcePtr& source, bool is_none) {
  impl_->add(source, make_none_match(is_none));
}

void GuardSet::add_tensor_match_unchecked(const SourcePtr& source, PyObject* tensor,
                                          const std::vector<int>& unchecked_sizes,
                                          const std::vector<int>& unchecked_strides) {
  impl_->add(source, make_tensor_match_unchecked(tensor, unchecked_sizes, unchecked_strides));
}

void GuardSet::add_symbol_binding(const SourcePtr& source, const std::string& kind, int dim, int slot) {
  BYTEGRAPH_CHECK(source != nullptr, "a symbol binding needs a source");
  SymbolBinding::Kind which;
  if (kind == "size") which = SymbolBinding::Kind::Size;
  else if (kind == "stride") which = SymbolBinding::Kind::Stride;
  else if (kind == "offset") which = SymbolBinding::Kind::StorageOffset;
  else if (kind == "int") which = SymbolBinding::Kind::Int;
  else throw PythonError::make(PyExc_ValueError, "symbol binding kind must be size, stride, offset or int, got " + kind);
  bool has_dim = which == SymbolBinding::Kind::Size || which == SymbolBinding::Kind::Stride;
  if (slot < 0 || (has_dim && dim < 0))
    throw PythonError::make(PyExc_ValueError, "symbol binding with a negative slot or dimension");
  SymbolBinding binding(which, dim, slot);
  impl_->shape_guards.set_slot_name(slot, binding.name(source->repr()));
  impl_->bindings.emplace_back(source, binding);
}

void GuardSet::add_shape_guard(PyObject* guard, const std::string& text) {
  impl_->shape_guards.add(ShapeGuard(parse_shape_expr(guard), text));
}

void GuardSet::add_same_object(const SourcePtr& first, const SourcePtr& second) {
  BYTEGRAPH_CHECK(first && second, "a relational guard needs sources");
  if (first->repr() == second->repr()) return;
  for (const auto& [a, b] : impl_->same_objects)
    if (a->repr() == first->repr() && b->repr() == second->repr()) return;
  impl_->same_objects.emplace_back(first, second);
}

void GuardSet::add_distinct_objects(const std::vector<SourcePtr>& sources) {
  if (sources.size() < 2) return;
  for (const auto& source : sources) BYTEGRAPH_CHECK(source != nullptr, "a relational guard needs sources");
  impl_->distinct_objects.push_back(sources);
}

void GuardSet::add_global_state_match(GlobalStateSnapshot snapshot) {
  if (impl_->global_state.empty()) impl_->global_state.push_back(make_global_state_match(std::move(snapshot)));
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
  for (const auto& [first, second] : impl_->same_objects)
    lines.push_back(second->repr() + ": OBJECT_ALIASING " + first->repr());
  for (const auto& sources : impl_->distinct_objects) {
    std::string line = "NO_ALIASING";
    for (size_t i = 0; i < sources.size(); ++i) line += (i ? ", " : " ") + sources[i]->repr();
    lines.push_back(line);
  }
  for (auto& line : impl_->shape_guards.describe()) lines.push_back(std::move(line));
  return lines;
}

std::unique_ptr<GuardTree> GuardSet::build() const {
  if (int slot = impl_->shape_guards.unbound_slot(); slot >= 0)
    throw PythonError::make(PyExc_ValueError, "a shape guard reads slot " + std::to_string(slot) + ", which nothing binds");
  auto tree = std::make_unique<FrameGuardTree>(impl_->shape_guards);
  for (const LeafPtr& leaf : impl_->global_state) tree->root().add_leaf(leaf);
  for (const auto& [repr, entry] : impl_->by_source) {
    GuardManager& manager = manager_for(tree->root(), entry.source);
    for (const LeafPtr& leaf : entry.leaves) manager.add_leaf(leaf);
  }
  for (const auto& [source, binding] : impl_->bindings) manager_for(tree->root(), source).add_binding(binding);
  // One captured slot per related source, filled by that source's manager.
  std::map<std::string, int> slots;
  std::vector<std::string> slot_names;
  auto slot_of = [&](const SourcePtr& source) {
    std::string repr = source->repr();
    auto found = slots.find(repr);
    if (found != slots.end()) return found->second;
    int slot = static_cast<int>(slot_names.size());
    slots.emplace(repr, slot);
    slot_names.push_back(repr);
    manager_for(tree->root(), source).add_capture(slot);
    return slot;
  };
  for (const auto& [first, second] : impl_->same_objects)
    tree->add_relation(make_same_object(slot_of(first), slot_of(second)));
  for (const auto& sources : impl_->distinct_objects) {
    std::vector<int> related;
    for (const auto& source : sources) related.push_back(slot_of(source));
    tree->add_relation(make_distinct_objects(std::move(related)));
  }
  tree->set_slot_names(std::move(slot_names));
  tree->root().finalize();
  return tree;
}

size_t GuardSet::size() const {
  size_t count = impl_->global_state.size() + impl_->same_objects.size() + impl_->distinct_objects.size() +
                 impl_->shape_guards.size();
  for (const auto& [repr, entry] : impl_->by_source) count += entry.leaves.size();
  return count;
}

void GuardSet::traverse(py::Visitor& visit) const {
  // The set is the designated owner of its leaves: it visits them even while trees built
  // from it share them, and a tree visits a leaf only once the set is gone (GuardManager).
  for (const LeafPtr& leaf : impl_->global_state) leaf->traverse(visit);
  for (const auto& [repr, entry] : impl_->by_source) {
    traverse_source(entry.source, visit);
    for (const LeafPtr& leaf : entry.leaves) leaf->traverse(visit);
  }
  for (const auto& [first, second] : impl_->same_objects) {
    traverse_source(first, visit);
    traverse_source(second, visit);
  }
  for (const auto& sources : impl_->distinct_objects)
    for (const auto& source : sources) traverse_source(source, visit);
}

void GuardSet::clear() { impl_ = std::make_unique<Impl>(); }

}  // namespace bytegraph::guards
