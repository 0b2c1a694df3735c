// Leaf checks: one property of one fetched value (its type, identity, value, length, dict
// keys, tensor metadata). A leaf is immutable once built and shared between the GuardSet
// that collected it and every tree built from it.
#pragma once

#include <Python.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "python/gc.h"
#include "python/ref.h"

namespace bytegraph::guards {

class LeafGuard {
 public:
  virtual ~LeafGuard() = default;
  // Hot path. `value` is borrowed. Throws PythonError only if Python code it ran raised.
  virtual bool check(PyObject* value) const = 0;
  // Why `value` fails this check, naming it as `source` (e.g. "L['x'] size[0]: expected 3,
  // got 4"). Only meaningful when check() returned false.
  virtual std::string explain(PyObject* value, const std::string& source) const = 0;
  // One readable line: "L['x']: TYPE_MATCH int".
  virtual std::string describe(const std::string& source) const = 0;
  // Equal keys mean the same check (used to drop duplicates for one source).
  virtual std::string dedupe_key() const = 0;
  // Cheaper checks run first so that a failing frame is rejected early.
  virtual int cost_rank() const = 0;
  // True if check() can run Python code (a dict subclass's keys(), a tensor subclass's
  // __torch_function__), which could drop the container reference a borrowed value lives on.
  virtual bool may_run_python() const { return false; }
  // Visits the Python objects this leaf owns (python/gc.h).
  virtual void traverse(py::Visitor&) const {}
};

using LeafPtr = std::shared_ptr<const LeafGuard>;

// Cost ranks, cheapest first.
enum LeafCost : int {
  kCostIdentity = 0,  // one pointer comparison
  kCostValue = 1,     // small constant comparison
  kCostLength = 2,
  kCostDictKeys = 3,
  kCostTensor = 4,
};

LeafPtr make_type_match(PyTypeObject* type);
LeafPtr make_id_match(PyObject* object);
LeafPtr make_none_match(bool is_none);
LeafPtr make_length_match(Py_ssize_t length);
// len(value) through __len__, for objects that are not builtin containers.
LeafPtr make_size_match(Py_ssize_t length);
// `key` is not in the dict (a builtin the code reads is not shadowed by a global).
LeafPtr make_dict_lacks_key(PyObject* key);
// getattr(value, `name`) raises AttributeError.
LeafPtr make_lacks_attr(PyObject* name);
// `keys` is a tuple of the expected keys, in insertion order.
LeafPtr make_dict_keys_match(PyObject* keys);
// Python constants only (see equals_match.cpp); raises TypeError (as PythonError) otherwise.
LeafPtr make_equals_match(PyObject* value);
LeafPtr make_value_match(PyObject* value);  // an immutable non-builtin constant: same class and ==
// An instance of exactly `type` (set, frozenset or a subclass) with `members` (a tuple) in
// that iteration order (see equals_match.cpp).
LeafPtr make_set_match(PyObject* type, PyObject* members);
// A traceable wrapper subclass (`tensor` has __tensor_flatten__): the same class, inner
// tensor names and metadata (subclass_metadata.cpp).
LeafPtr make_subclass_metadata_match(PyObject* tensor, PyObject* compare = nullptr);
// Root-level leaf (global_state.cpp): torch's global state as it was when the frame started.
struct GlobalStateDetails;
// Whether saved-tensors hooks are disabled (their message; None when enabled); which
// scaled-dot-product-attention backends are enabled, and their priority order; how many
// hooks torch.nn runs on every module's call (register_module_forward_hook and friends).
enum class TracedState : int { SavedTensorsHooks, SdpBackends, ModuleHooks };
constexpr int kTracedStateCount = 3;
struct GlobalStateSnapshot {
  std::vector<py::Ref<>> components;  // grad mode, default dtype, autocast, ...: see global_state.cpp
  bool autocast_details = false;      // each device's autocast switch and dtype are compared too
  bool compare_details = false;       // autocast details or torch-function modes
  std::shared_ptr<const GlobalStateDetails> details;
  static GlobalStateSnapshot now();
  // Each device's autocast switch and dtype are compared even while autocast is off: the
  // trace folded a query of them.
  void compare_autocast_settings();
  // The thread handles no exception when the frame starts (sys.exception() is None there):
  // the trace answered sys.exception() / sys.exc_info() outside its own except blocks.
  bool no_handled_exception = false;
  // State that few traces touch, each compared only for a trace that read or switched it:
  // calls the hot path otherwise does without. Its value when the frame started, per state.
  std::array<py::Ref<>, kTracedStateCount> traced_states;
  unsigned compared_traced_states = 0;  // bit i: TracedState i is compared
  void compare(TracedState state) { compared_traced_states |= 1u << static_cast<int>(state); }
  bool compares(TracedState state) const { return (compared_traced_states >> static_cast<int>(state)) & 1u; }
};
LeafPtr make_global_state_match(GlobalStateSnapshot snapshot);
bool grad_mode_enabled_now();
// `dynamic_dims`: dimensions whose size may change (tensor_match.cpp).
LeafPtr make_tensor_match(PyObject* tensor, const std::vector<int>& dynamic_dims);
// Symbolic shapes: these sizes and strides are left to the shape guards (shape_guard.h).
LeafPtr make_tensor_match_unchecked(PyObject* tensor, const std::vector<int>& unchecked_sizes,
                                    const std::vector<int>& unchecked_strides);

}  // namespace bytegraph::guards
