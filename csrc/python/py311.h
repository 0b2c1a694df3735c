// CPython 3.11 frame internals, as the frame hook needs them.
//
// Mirrors (reads, never copies): Include/internal/pycore_frame.h of CPython v3.11.7
// (`_PyInterpreterFrame`: f_func, f_globals, f_builtins, f_code, frame_obj, localsplus) and
// Python/ceval.c `_PyEval_Vector`, which clears and pops the frame after the eval function
// returns, whether or not the frame ran. Include through frame/cpython_frame.h only.
#pragma once

#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "python/py311.h describes CPython 3.11 only"
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

inline PyCodeObject* frame_code(InterpreterFrame* frame) { return frame->f_code; }  // borrowed
inline PyObject* frame_function(InterpreterFrame* frame) {  // borrowed
  return reinterpret_cast<PyObject*>(frame->f_func);
}
inline PyObject* frame_globals(InterpreterFrame* frame) { return frame->f_globals; }    // borrowed
inline PyObject* frame_builtins(InterpreterFrame* frame) { return frame->f_builtins; }  // borrowed
inline PyObject** frame_localsplus(InterpreterFrame* frame) { return frame->localsplus; }

// Whether the hook may answer for this frame without evaluating it. Generator frames never
// reach this point (their code is skipped earlier); a thread-owned frame is always fine on
// 3.11 because the caller clears it.
inline bool frame_can_be_replaced(PyThreadState*, InterpreterFrame* frame) {
  return frame->owner == FRAME_OWNED_BY_THREAD;
}

// Whether a call may be answered without making its frame at all (CapturedCall's direct
// path): the same condition as frame_can_be_replaced, less what concerns a made frame.
inline bool thread_can_replace_calls(PyThreadState*) { return true; }

// After the hook produced the frame's result without evaluating it. On 3.11 the caller of the
// eval function (`_PyEval_Vector`) clears and pops the frame itself: nothing to do.
inline void finish_replaced_frame(PyThreadState*, InterpreterFrame*) {}

inline Py_ssize_t request_code_extra_index(freefunc free_extra) {
  return _PyEval_RequestCodeExtraIndex(free_extra);
}
inline int get_code_extra(PyCodeObject* code, Py_ssize_t index, void** extra) {
  return _PyCode_GetExtra(reinterpret_cast<PyObject*>(code), index, extra);
}
inline int set_code_extra(PyCodeObject* code, Py_ssize_t index, void* extra) {
  return _PyCode_SetExtra(reinterpret_cast<PyObject*>(code), index, extra);
}

}  // namespace bytegraph::py::shim
