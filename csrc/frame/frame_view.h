// What the hook knows about a frame it intercepted, before the frame's first instruction.
//
// At hook time the argument slots of localsplus hold the call's arguments (defaults already
// filled in, `*args` a tuple, `**kwargs` a dict, cell arguments still raw values); every
// other slot is empty, and free variables are still in the function's closure. A FrameView
// borrows all of it for the duration of one hook call and never outlives the frame.
#pragma once

#include <Python.h>

#include <span>

#include "guards/guard_set.h"
#include "python/ref.h"

namespace bytegraph::frame {

// Number of argument slots at the start of localsplus: positional (incl. positional-only),
// keyword-only, then one for `*args` and one for `**kwargs` when present.
int argument_slot_count(PyCodeObject* code);

class FrameView {
 public:
  FrameView(PyCodeObject* code, PyObject* function, PyObject* globals, PyObject* builtins,
            PyObject* const* localsplus);

  PyCodeObject* code() const { return code_; }         // borrowed
  PyObject* function() const { return function_; }     // borrowed; a function object
  PyObject* globals() const { return globals_; }       // borrowed
  PyObject* builtins() const { return builtins_; }     // borrowed
  PyObject* closure() const;                           // borrowed tuple of cells, or null
  std::span<PyObject* const> arguments() const { return {localsplus_, size_t(nargs_)}; }
  // The values guards read (see guards/guard_set.h).
  guards::FrameValues values() const;
  // {argument name: value} plus {free variable name: cell contents} for bound free
  // variables. Built only for Python callbacks and Python guards (slow path).
  py::Ref<> locals_dict() const;

 private:
  PyCodeObject* code_;
  PyObject* function_;
  PyObject* globals_;
  PyObject* builtins_;
  PyObject* const* localsplus_;
  int nargs_;
};

// The frame the hook is looking up or compiling on this thread, if any: lets slow-path
// consumers that only get FrameValues (Python guards) find the function object too.
const FrameView* current_frame_view();
class CurrentFrameScope {
 public:
  explicit CurrentFrameScope(const FrameView& view);
  ~CurrentFrameScope();
  CurrentFrameScope(const CurrentFrameScope&) = delete;
  CurrentFrameScope& operator=(const CurrentFrameScope&) = delete;

 private:
  const FrameView* previous_;
};

// The same {name: value} mapping built from guard inputs (for Python guards, which see only
// FrameValues): argument slots by name, free variables from the closure.
py::Ref<> locals_dict_from_values(PyCodeObject* code, const guards::FrameValues& values);

// A `types.SimpleNamespace` with f_code, f_globals, f_builtins, f_locals and function (None
// where unknown): what Python callbacks and Python guards receive.
py::Ref<> make_frame_info(PyCodeObject* code, PyObject* function, PyObject* globals,
                          PyObject* builtins, py::Ref<> locals);

}  // namespace bytegraph::frame
