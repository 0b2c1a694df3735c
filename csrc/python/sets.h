// Walking and merging sets through the public API only: CPython 3.13 took the private
// _PySet_NextEntry/_PySet_Update out of its public headers.
#pragma once

#include <Python.h>

#include "python/errors.h"

namespace bytegraph::py {

// Calls fn(key) for each member of `set` (a set or frozenset), in the set's order. The key is
// borrowed: the set keeps it alive while it is not changed; fn must not change the set.
template <class Fn>
void for_each_set_key(PyObject* set, Fn&& fn) {
  Ref<> iterator = check(PyObject_GetIter(set));
  while (PyObject* next = PyIter_Next(iterator.get())) {
    Ref<> key = Ref<>::steal(next);
    fn(key.get());
  }
  if (PyErr_Occurred()) throw_python_error();
}

// set |= other, for a set `set` and any set or frozenset `other`.
inline void set_update(PyObject* set, PyObject* other) {
  for_each_set_key(other, [&](PyObject* key) { check_status(PySet_Add(set, key)); });
}

}  // namespace bytegraph::py
