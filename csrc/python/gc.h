// Support for CPython's cycle collector in types that own Python objects through C++
// (a type's tp_traverse walks them with a Visitor).
//
// The one rule: visit a reference only from the Python object that owns it alone. The
// collector subtracts one per visit from the object's count of outside references; a
// reference visited from two owners makes it free objects still in use, while a reference
// not visited only keeps a cycle alive. So C++ nodes shared through shared_ptr are walked
// only while their owner is the only one (`sole_owner`).
#pragma once

#include <Python.h>

#include <memory>

#include "python/ref.h"

namespace bytegraph::py {

class Visitor {
 public:
  Visitor(visitproc visit, void* arg) : visit_(visit), arg_(arg) {}
  void operator()(PyObject* object) {
    if (object != nullptr && status_ == 0) status_ = visit_(object, arg_);
  }
  template <class T>
  void operator()(const Ref<T>& ref) {
    (*this)(ref.object());
  }
  // The collector asked to stop (a visit returned non-zero): tp_traverse returns this.
  int status() const { return status_; }

 private:
  visitproc visit_;
  void* arg_;
  int status_ = 0;
};

// Whether the holder of `node` is its only owner, so it may visit what `node` owns.
template <class T>
bool sole_owner(const std::shared_ptr<T>& node) {
  return node != nullptr && node.use_count() == 1;
}

}  // namespace bytegraph::py
