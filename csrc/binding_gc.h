// Cycle-collector slots for bound classes whose instances own Python objects through C++
// (python/gc.h), e.g. a TraceResult or a guard tree held from a module's globals while
// their guards hold that module's functions.
#pragma once

#include <nanobind/nanobind.h>

#include "python/gc.h"

namespace bytegraph {

namespace nb = nanobind;

// nb::type_slots(GcSlots<T, traverse, clear>::slots) gives class T a tp_traverse calling
// `traverse(object, visitor)` and a tp_clear calling `clear(object)`, for instances that own
// their C++ object (a view returned by reference owns nothing and visits nothing).
template <class T, void (*Traverse)(const T&, py::Visitor&), void (*Clear)(T&)>
struct GcSlots {
  static int traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));  // instances of heap types own a reference to their type
    auto [ready, owned] = nb::inst_state(self);
    if (!ready || !owned) return 0;
    py::Visitor visitor(visit, arg);
    Traverse(*nb::inst_ptr<T>(self), visitor);
    return visitor.status();
  }
  static int clear(PyObject* self) {
    auto [ready, owned] = nb::inst_state(self);
    if (ready && owned) Clear(*nb::inst_ptr<T>(self));
    return 0;
  }
  static inline PyType_Slot slots[] = {
      {Py_tp_traverse, reinterpret_cast<void*>(&traverse)},
      {Py_tp_clear, reinterpret_cast<void*>(&clear)},
      {0, nullptr},
  };
};

}  // namespace bytegraph
