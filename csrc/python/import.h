// Importing a module from C++ at any moment, whatever Python frame is current.
#pragma once

#include "python/ref.h"

namespace bytegraph {

// The module `name` (dotted names give the submodule), imported if needed. Unlike
// PyImport_ImportModule, it does not look `__import__` up in the current frame's builtins:
// the frame hook runs while the user's frame is current, and some frames have builtins
// without it (namedtuple's generated __new__ runs with `__builtins__ = {}`). Throws
// PythonError.
py::Ref<> import_module(const char* name);

// builtins.`name` (borrowed, kept for the process: the builtins module is never unloaded).
// Throws PythonError if there is no such builtin.
PyObject* builtin_object(const char* name);

}  // namespace bytegraph
