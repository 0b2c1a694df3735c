// The guards a trace relied on, in the order it read values. Kept by the tracer (not pushed
// straight into a GuardSet) so that a rollback can drop the guards of an abandoned
// instruction; applied to a guards::GuardSet once the trace is done.
#pragma once

#include <Python.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "guards/guard_set.h"
#include "guards/source.h"
#include "python/ref.h"

namespace bytegraph::trace {

class GuardLog {
 public:
  enum class Kind { Type, Id, Equals, Value, Tensor, Length, DictKeys, SetItems, None, SameObject, LacksKey, LacksAttr, Size, SubclassMetadata };

  // SetItems: `object` is (the set's type, a tuple of its members in order).
  // SubclassMetadata: `object` is (the wrapper-subclass tensor whose flatten metadata is pinned,
  // the function comparing it or None).
  void add(Kind kind, const guards::SourcePtr& source, PyObject* object = nullptr, Py_ssize_t length = 0);
  // TENSOR_MATCH on `tensor`, leaving the listed (symbolic) sizes and strides to the shape guards.
  void add_tensor(const guards::SourcePtr& source, PyObject* tensor, std::vector<int> unchecked_sizes,
                  std::vector<int> unchecked_strides);
  // `second` reached the same object as `first` did during the trace.
  void add_same_object(const guards::SourcePtr& first, const guards::SourcePtr& second);
  size_t size() const { return entries_.size(); }
  void truncate(size_t length);
  void apply(guards::GuardSet& set) const;
  // One readable line per guard: "L['x'] TENSOR_MATCH", for tests and logs.
  std::vector<std::string> describe() const;

  struct Entry {
    Kind kind;
    guards::SourcePtr source;
    py::Ref<> object;
    Py_ssize_t length;
    std::string key;  // kind and source name, for de-duplication
    guards::SourcePtr other;  // SameObject: the first source
    std::vector<int> unchecked_sizes, unchecked_strides;  // Tensor: left to the shape guards
  };
  const std::vector<Entry>& entries() const { return entries_; }
  static const char* kind_name(Kind kind);
  // Visits the objects and source keys the log holds (python/gc.h).
  void traverse(py::Visitor& visit) const;

 private:
  std::vector<Entry> entries_;
  std::unordered_set<std::string> keys_;
};

}  // namespace bytegraph::trace
