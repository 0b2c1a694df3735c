// A type's own namespace (what its class body defined, not its bases'). Static builtin types
// keep theirs in the interpreter state from 3.12 on (tp_dict is NULL there), so it is read
// through PyType_GetDict where that exists.
#pragma once

#include <Python.h>

#include "python/ref.h"
#include "python/version.h"

namespace bytegraph::py {

inline Ref<> type_dict(PyTypeObject* type) {
#if PY_VERSION_HEX >= 0x030C0000
  return Ref<>::steal(PyType_GetDict(type));
#else
  return Ref<>::newref(type->tp_dict);
#endif
}

// `name` in the type's own namespace (borrowed: the type keeps it alive), or null.
inline PyObject* own_type_attribute(PyTypeObject* type, const char* name) {
  Ref<> dict = type_dict(type);
  return dict ? PyDict_GetItemString(dict.get(), name) : nullptr;
}

}  // namespace bytegraph::py
