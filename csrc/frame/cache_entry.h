// One compiled version of a code object: what runs instead of the original frame when its
// guards pass.
//
// Contract with the compile path (frame_compiler.h): the replacement code keeps the
// original's leading argument names, co_freevars and co_cellvars (so the frame's argument
// slots and the closure mean the same thing to it), and keeps its MAKE_CELL /
// COPY_FREE_VARS / RESUME prefix. `make_cache_entry` checks the first two and raises
// ValueError otherwise.
#pragma once

#include <Python.h>

#include <memory>
#include <string>
#include <vector>

#include "guards/guard_set.h"
#include "python/ref.h"

namespace bytegraph::frame {

struct CacheEntry {
  py::Ref<> code;             // the replacement code, as the compiler produced it
  py::Ref<> positional_code;  // same code, every argument slot made positional
  py::Ref<> function;         // built once around positional_code (original globals, closure)
  std::unique_ptr<guards::GuardTree> guards;  // null: always matches
  py::Ref<> keepalive;        // opaque (e.g. the compiled graph); may be null
  py::Ref<> backend_key;      // the compiler's backend_key() (frame_compiler.h); may be null

  std::vector<std::string> describe_guards() const;
  // Whether a compiler keyed `key` may use this entry: a null key on either side matches any
  // (the run-only and eager stances look entries up without compiling).
  bool made_for(PyObject* key) const { return key == nullptr || !backend_key || backend_key.get() == key; }
};

// Checks the replacement against the original code, builds the positional copy and the
// function around it (globals, name, qualname and closure of `function`), and marks both
// code objects as bytegraph's own so the hook never intercepts them. Throws PythonError.
std::shared_ptr<CacheEntry> make_cache_entry(PyCodeObject* original, PyObject* function,
                                             py::Ref<> replacement,
                                             std::unique_ptr<guards::GuardTree> guards,
                                             py::Ref<> keepalive);

// A function running `positional_code` with the globals, name, qualname and closure of
// `original_function` (a function object). Throws PythonError.
py::Ref<> make_entry_function(PyObject* positional_code, PyObject* original_function);

// `code` with co_argcount = every argument slot, no positional-only or keyword-only
// arguments and no VARARGS/VARKEYWORDS flags: the localsplus layout stays the same, so the
// frame's argument slots can be passed to it positionally. Throws PythonError.
py::Ref<> make_positional_code(PyObject* code);

}  // namespace bytegraph::frame
