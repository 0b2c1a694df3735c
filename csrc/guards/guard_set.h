// What the tracer relied on, collected during one compile, then built into a guard tree.
//
// Contract between the tracer (calls the `add_*` methods as it reads values) and the cache
// (owns the built `GuardTree` per entry and checks it before each call). Each `add_*` is
// idempotent for the same source and check. A value that cannot be guarded (EQUALS_MATCH on a
// non-constant, TENSOR_MATCH on a non-tensor) raises PythonError (TypeError) and adds nothing.
// A missing attribute, key, slot or cell at check time fails the guard; it is not an error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "guards/leaf_guard.h"
#include "guards/source.h"
#include "python/gc.h"
#include "python/ref.h"

namespace bytegraph::guards {

class GuardTree;

// The values the guards read: the frame's local slots (arguments; free variables come from
// the closure), its globals and builtins. All borrowed for the duration of one check.
struct FrameValues {
  PyObject* const* locals = nullptr;  // localsplus, argument slots valid
  int nlocals = 0;
  PyObject* globals = nullptr;
  PyObject* builtins = nullptr;
  PyObject* closure = nullptr;  // tuple of cells, or null
  // Filled while a tree with shape guards is checked: the sizes and ints they read (one slot
  // each, see shape_guard.h). Set by the tree itself; callers leave it null.
  int64_t* symbol_values = nullptr;
  // Values captured during one check for the relational guards (relational_guards.h): one
  // strong reference per slot, set by the tree walk, owned and released by the tree's check.
  PyObject** captured = nullptr;
};

class GuardSet {
 public:
  GuardSet();
  ~GuardSet();
  void add_type_match(const SourcePtr& source, PyTypeObject* type);
  void add_id_match(const SourcePtr& source, PyObject* object);
  void add_equals_match(const SourcePtr& source, PyObject* value);   // Python constants
  void add_value_match(const SourcePtr& source, PyObject* value);    // opaque value constants (==)
  void add_tensor_match(const SourcePtr& source, PyObject* tensor);  // type, dtype, device, shape, stride, requires_grad
  // The same, except that the sizes of `dynamic_dims` (negative counts from the end) and the
  // strides that scale with them are left unchecked: the hook for dynamic shapes.
  void add_tensor_match(const SourcePtr& source, PyObject* tensor,
                        const std::vector<int>& dynamic_dims);
  void add_length_match(const SourcePtr& source, Py_ssize_t length);
  void add_size_match(const SourcePtr& source, Py_ssize_t length);  // through __len__
  void add_dict_keys_match(const SourcePtr& source, PyObject* keys);  // a tuple, in order
  void add_set_match(const SourcePtr& source, PyObject* type, PyObject* members);  // a tuple, in order
  void add_none_match(const SourcePtr& source, bool is_none);
  // compare(traced, now) -> bool replaces the class's __metadata_guard__ (or ==) where given.
  void add_subclass_metadata_match(const SourcePtr& source, PyObject* tensor, PyObject* compare = nullptr);  // __tensor_flatten__'s
  // TENSOR_MATCH leaving exactly these sizes and strides to the shape guards (symbolic ones).
  void add_tensor_match_unchecked(const SourcePtr& source, PyObject* tensor,
                                  const std::vector<int>& unchecked_sizes,
                                  const std::vector<int>& unchecked_strides);
  // Shape guards (shape_guard.h): the value at `source` is read into `slot`: its size or
  // stride `dim` ("size", "stride"), or the int itself ("int"); `guard` is an expression tuple
  // over slots, `text` how it reads.
  void add_symbol_binding(const SourcePtr& source, const std::string& kind, int dim, int slot);
  void add_shape_guard(PyObject* guard, const std::string& text);
  void add_dict_lacks_key(const SourcePtr& source, PyObject* key);  // an exact dict
  void add_lacks_attr(const SourcePtr& source, PyObject* name);      // any object
  // Relations between values read from different sources: `second` is the same object as
  // `first` (one object reached two ways during tracing), and the `sources` are pairwise
  // distinct objects (tensor inputs the graph treats as unaliased).
  void add_same_object(const SourcePtr& first, const SourcePtr& second);
  void add_distinct_objects(const std::vector<SourcePtr>& sources);
  // Global state the graph depends on, checked on the tree's root: torch's state as it was
  // when the frame started (grad mode, default dtype, autocast, ...: leaf_guard.h).
  void add_global_state_match(GlobalStateSnapshot snapshot);
  // Human-readable list, one guard a line (for logs, explain() and comptime.print_guards).
  std::vector<std::string> describe() const;
  std::unique_ptr<GuardTree> build() const;
  // The number of distinct guards collected.
  size_t size() const;
  // Visits the Python objects this set owns alone (python/gc.h); forgets every guard.
  void traverse(py::Visitor& visit) const;
  void clear();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// torch.is_grad_enabled() now.
bool current_grad_mode();

class GuardTree {
 public:
  virtual ~GuardTree() = default;
  // Hot path: no allocation where the C API allows. Throws PythonError if a check raised.
  virtual bool check(const FrameValues& frame) const = 0;
  // Slow path: the first failing guard in words, e.g. "L['x'] size[0]: expected 3, got 4";
  // empty if every guard passes.
  virtual std::string explain_failure(const FrameValues& frame) const = 0;
  virtual std::vector<std::string> describe() const = 0;
  virtual size_t guard_count() const = 0;
  // Visits the Python objects this tree owns alone (python/gc.h), for the tp_traverse of
  // the Python objects that hold a tree.
  virtual void traverse(py::Visitor&) const {}
};

}  // namespace bytegraph::guards
