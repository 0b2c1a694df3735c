// How a value of the trace is a dict key or a set member: the real object it hashes as.
#pragma once

#include "trace/value.h"

namespace bytegraph::trace {

// Objects held by identity: their hash and == are the default ones (object's or type's), so
// a lookup cannot run user code or depend on data.
bool hashed_by_identity(PyObject* object);
// A member of a C++ enumeration bound to Python (pybind11's, as torch's SDPBackend): one object
// per value, immutable, hashed and compared by C code; held as that object, like the above.
bool enum_member(PyObject* object);
// An object held by value: a constant, or a tuple of them.
bool constant_member(PyObject* item);
// The real key a value is stored under in a dict: a constant (or a tuple of constants) as
// itself, an object hashed by identity (a class, a function) or an enum member as that
// object, pinned by an identity guard, a frozenset subclass instance by its members. Raises TypeError for an
// unhashable container, as the real dict does; a break of `kind` for anything else.
py::Ref<> dict_key(Tracer& tracer, const ValuePtr& key, const char* kind);
// A real dict key as a value of the trace again (the inverse of dict_key).
ValuePtr key_value(Tracer& tracer, PyObject* key);
// The key a value has in a set: dict_key's, and a tensor by its fake (tensors hash by
// identity, which their fakes follow).
py::Ref<> set_key(Tracer& tracer, const ValuePtr& item);

}  // namespace bytegraph::trace
