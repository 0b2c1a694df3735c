// A class's own attributes (its __dict__, no MRO), for every supported CPython.
//
// From 3.12 the builtin static types (object, dict, int...) keep their dict in the
// interpreter state and leave tp_dict null; PyType_GetDict (new in 3.12) reaches it. Heap
// types still fill tp_dict.
#pragma once

#include <Python.h>

#include "python/ref.h"

namespace bytegraph::py {

// The attribute `name` defined by `type` itself, borrowed, or null when the type does not
// define it. The dict is owned by the type, so the result lives as long as the type does and
// the entry is not replaced (for builtin types: as long as the interpreter).
inline PyObject* own_type_attribute(PyTypeObject* type, const char* name) {
#if PY_VERSION_HEX >= 0x030C0000
  Ref<> dict = Ref<>::steal(PyType_GetDict(type));
  if (!dict) {
    PyErr_Clear();
    return nullptr;
  }
  return PyDict_GetItemString(dict.get(), name);
#else
  return type->tp_dict == nullptr ? nullptr : PyDict_GetItemString(type->tp_dict, name);
#endif
}

inline PyObject* own_type_attribute(PyObject* type, const char* name) {
  return own_type_attribute(reinterpret_cast<PyTypeObject*>(type), name);
}

}  // namespace bytegraph::py
