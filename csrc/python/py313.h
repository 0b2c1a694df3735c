// CPython 3.13 frame internals, as the frame hook needs them.
//
// Mirrors (reads, never copies):
// - Include/internal/pycore_frame.h of v3.13.0: `_PyInterpreterFrame` (f_executable, the code
//   object as a strong reference, replaces 3.12's f_code; f_funcobj, f_globals, f_builtins,
//   f_locals, frame_obj, stacktop, owner, localsplus) and `_frameowner`.
// - Python/ceval.c `clear_thread_frame`: as on 3.12 the evaluation loop clears and pops the
//   frame it was given, so a hook that answers without evaluating must do both.
// - Python/frame.c `_PyFrame_ClearExceptCode`/`_PyFrame_ClearLocals` (not exported): what
//   clearing a frame without a frame object means. `_PyThreadState_PopFrame` is exported on
//   3.13 and is called as is.
// PEP 667 (frame.f_locals as a write-through proxy) changes frame objects only: the hook
// reads the argument slots of localsplus before the frame runs, as on 3.11 and 3.12.
// Include through frame/cpython_frame.h only.
#pragma once

#include <Python.h>

#if PY_VERSION_HEX < 0x030D0000 || PY_VERSION_HEX >= 0x030E0000
#error "python/py313.h describes CPython 3.13 only"
#endif

#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#define BYTEGRAPH_UNDEF_BUILD_CORE 1
#endif
#include <internal/pycore_frame.h>
#ifdef BYTEGRAPH_UNDEF_BUILD_CORE
#undef Py_BUILD_CORE
#undef BYTEGRAPH_UNDEF_BUILD_CORE
#endif

namespace bytegraph::py::shim {

using InterpreterFrame = _PyInterpreterFrame;
using EvalFrameFunction = _PyFrameEvalFunction;

// f_executable is a code object for every frame the hook sees (None only for the C-stack
// shim frames, which never reach an eval function).
inline PyCodeObject* frame_code(InterpreterFrame* frame) {  // borrowed
  PyObject* executable = frame->f_executable;
  return PyCode_Check(executable) ? reinterpret_cast<PyCodeObject*>(executable) : nullptr;
}
inline PyObject* frame_function(InterpreterFrame* frame) { return frame->f_funcobj; }     // borrowed
inline PyObject* frame_globals(InterpreterFrame* frame) { return frame->f_globals; }      // borrowed
inline PyObject* frame_builtins(InterpreterFrame* frame) { return frame->f_builtins; }    // borrowed
inline PyObject** frame_localsplus(InterpreterFrame* frame) { return frame->localsplus; }

// As on 3.12: only thread-owned frames without a frame object, and not while a PEP 669 or
// sys.settrace callback runs on this thread.
inline bool frame_can_be_replaced(PyThreadState* tstate, InterpreterFrame* frame) {
  return frame->owner == FRAME_OWNED_BY_THREAD && frame->frame_obj == nullptr &&
         tstate->tracing == 0;
}

// Whether a call may be answered without making its frame at all (CapturedCall's direct
// path): the same condition as frame_can_be_replaced, less what concerns a made frame.
inline bool thread_can_replace_calls(PyThreadState* tstate) { return tstate->tracing == 0; }

// After the hook produced the frame's result without evaluating it: clear the frame's
// references and pop it off the thread's data stack, as `clear_thread_frame` does.
inline void finish_replaced_frame(PyThreadState* tstate, InterpreterFrame* frame) {
  tstate->c_recursion_remaining--;
  for (int i = 0; i < frame->stacktop; i++) Py_XDECREF(frame->localsplus[i]);
  frame->stacktop = 0;
  Py_CLEAR(frame->f_locals);
  Py_DECREF(frame->f_funcobj);
  Py_DECREF(frame->f_executable);
  tstate->c_recursion_remaining++;
  _PyThreadState_PopFrame(tstate, frame);
}

inline Py_ssize_t request_code_extra_index(freefunc free_extra) {
  return PyUnstable_Eval_RequestCodeExtraIndex(free_extra);
}
inline int get_code_extra(PyCodeObject* code, Py_ssize_t index, void** extra) {
  return PyUnstable_Code_GetExtra(reinterpret_cast<PyObject*>(code), index, extra);
}
inline int set_code_extra(PyCodeObject* code, Py_ssize_t index, void* extra) {
  return PyUnstable_Code_SetExtra(reinterpret_cast<PyObject*>(code), index, extra);
}

}  // namespace bytegraph::py::shim
