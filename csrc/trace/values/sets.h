// Sets and frozensets built in traced code ({a, b}, set comprehensions, set(...)).
#pragma once

#include <unordered_map>

#include "trace/tracer.h"
#include "trace/values/keys.h"

namespace bytegraph::trace {

// A set whose members the tracer knows: constants (compared by value, as the real set
// compares them) and objects whose hash and equality are their identity (classes,
// functions, modules: pinned by identity guards). The members live in a real Python set, so
// membership, iteration order and the set algebra are CPython's own. A tensor is a member
// by identity, keyed by its fake (torch.nn's `memo` sets of parameters); such a set is never
// iterated, since its order would be the real tensors' addresses.
// A frozenset of constants is a ConstantValue; this kind is for mutable sets, and for
// frozensets holding identity members. A set from outside the trace (`source` set) is guarded
// on its members (SET_MATCH); changes to it are written back after the graph.
class SetValue : public Value {
 public:
  void write_changes(PlanWriter& writer, std::vector<codegen::SideEffectPlan>& effects) override;
  explicit SetValue(bool frozen, guards::SourcePtr source = nullptr, bool mutable_here = true);
  std::string repr() const override;
  std::optional<codegen::OutputPlan> remake(PlanWriter& writer) override;
  PyObject* python_type() const override { return frozen_ ? (PyObject*)&PyFrozenSet_Type : (PyObject*)&PySet_Type; }
  bool frozen() const { return frozen_; }
  ValuePtr get_attr(Tracer& tracer, const std::string& name) override;
  bool truthy(Tracer&) const override { return size() > 0; }
  std::optional<Args> unpack(Tracer& tracer) override;  // in the real set's order
  py::Ref<> as_graph_arg(Tracer& tracer, ArgMode mode) const override;
  std::function<void()> saved_state() override;

  size_t size() const;
  // Callers journal the set first (mutations made during a rolled-back instruction are undone).
  void add(Tracer& tracer, const ValuePtr& item);
  bool discard(Tracer& tracer, const ValuePtr& item);  // whether it was a member
  void clear();
  bool contains(Tracer& tracer, const ValuePtr& item) const;
  // A new real set (or frozenset) of the members' keys: what the set algebra runs on.
  py::Ref<> keys(bool frozen) const;
  // Replaces the members by those of `keys` (a real set), taking values from `sources`.
  void assign(PyObject* keys, const std::vector<const SetValue*>& sources);
  // Only constants: the set can be folded as a real set (sorted(s), s == {1, 2}).
  bool only_constants() const { return members_.empty(); }
  // Created during the trace, so mutating it is a local effect.
  bool mutable_here() const { return mutable_here_; }

 private:
  bool frozen_, mutable_here_;
  py::Ref<> keys_;  // a real set: constants, and the identity members' objects
  std::unordered_map<PyObject*, ValuePtr> members_;  // identity members, by their object
};

// A new set (or frozenset) of `items`.
std::shared_ptr<SetValue> make_set(Tracer& tracer, bool frozen, const Args& items);
// A real set or frozenset from outside the trace, read through `source`: guarded on its
// members; null when a member is one the tracer cannot hold (a tensor, an object whose hash
// runs Python code).
std::shared_ptr<SetValue> wrap_set(Tracer& tracer, PyObject* real, const guards::SourcePtr& source);
// A set of `members` (a tuple of real objects, unguarded: the caller guards where they came
// from), or null as for wrap_set. Its changes are written back through `source`.
std::shared_ptr<SetValue> set_of_members(Tracer& tracer, bool frozen, PyObject* members, guards::SourcePtr source);
// |, &, -, ^ and comparisons where an operand is a set, a frozenset or a dict's keys view
// (in-place forms mutate a set made in the trace); null when no operand is one.
ValuePtr set_operator(Tracer& tracer, PyObject* function, const Args& operands);
// set's method `name` (set.add, set.__or__, set.__len__, ...) on `self`, a set or an instance of
// a set subclass (its members); NotImplemented from an operator whose other operand is no set.
ValuePtr call_set_method(Tracer& tracer, const ValuePtr& self, const std::string& name, const Args& args);
bool set_method_mutates(const std::string& name);

}  // namespace bytegraph::trace
