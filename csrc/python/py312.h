// CPython 3.12 frame internals, as the frame hook needs them (checked against v3.12.1).
//
// Mirrors (reads, never copies):
// - Include/internal/pycore_frame.h: `_PyInterpreterFrame` (f_code, f_funcobj, f_globals,
//   f_builtins, f_locals, frame_obj, stacktop, owner, localsplus) and `_frameowner`.
// - Python/ceval.c: in 3.12 the evaluation loop clears and pops the frame it was given
//   (`clear_thread_frame`), so a hook that returns a result without evaluating the frame
//   must do that itself.
// - Python/frame.c `_PyFrame_ClearExceptCode` and Python/pystate.c `_PyThreadState_PopFrame`
//   (neither is exported): what clearing and popping a thread-owned frame means.
// - Include/cpython/pystate.h: `_PyStackChunk`, tstate->datastack_{chunk,top,limit},
//   tstate->tracing.
// Include through frame/cpython_frame.h only.
#pragma once

#include <Python.h>

#if PY_VERSION_HEX < 0x030C0000 || PY_VERSION_HEX >= 0x030D0000
#error "python/py312.h describes CPython 3.12 only"
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

inline PyCodeObject* frame_code(InterpreterFrame* frame) { return frame->f_code; }        // borrowed
inline PyObject* frame_function(InterpreterFrame* frame) { return frame->f_funcobj; }     // borrowed
inline PyObject* frame_globals(InterpreterFrame* frame) { return frame->f_globals; }      // borrowed
inline PyObject* frame_builtins(InterpreterFrame* frame) { return frame->f_builtins; }    // borrowed
inline PyObject** frame_localsplus(InterpreterFrame* frame) { return frame->localsplus; }

// We only replace frames we can clear ourselves afterwards: owned by the thread, not yet
// exposed as a frame object (a frame object would need CPython's static `take_ownership`),
// and not while a PEP 669/sys.settrace callback is running on this thread.
inline bool frame_can_be_replaced(PyThreadState* tstate, InterpreterFrame* frame) {
  return frame->owner == FRAME_OWNED_BY_THREAD && frame->frame_obj == nullptr &&
         tstate->tracing == 0;
}

// Whether a call may be answered without making its frame at all (CapturedCall's direct
// path): the same condition as frame_can_be_replaced, less what concerns a made frame.
inline bool thread_can_replace_calls(PyThreadState* tstate) { return tstate->tracing == 0; }

namespace detail {

// The data-stack pop of Python/pystate.c `_PyThreadState_PopFrame` for v3.12: the frame is
// the top of the thread's data stack; if it starts a chunk, that chunk is released.
inline void pop_thread_frame(PyThreadState* tstate, InterpreterFrame* frame) {
  PyObject** base = reinterpret_cast<PyObject**>(frame);
  _PyStackChunk* chunk = tstate->datastack_chunk;
  if (base == &chunk->data[0]) {
    _PyStackChunk* previous = chunk->previous;  // the root chunk is never popped
    tstate->datastack_top = &previous->data[previous->top];
    tstate->datastack_chunk = previous;
    tstate->datastack_limit =
        reinterpret_cast<PyObject**>(reinterpret_cast<char*>(previous) + previous->size);
    PyObjectArenaAllocator arena;
    PyObject_GetArenaAllocator(&arena);
    arena.free(arena.ctx, chunk, chunk->size);
  } else {
    tstate->datastack_top = base;
  }
}

}  // namespace detail

// After the hook produced the frame's result without evaluating it: 3.12's callers expect
// the eval function to have cleared and popped the frame, so do what `clear_thread_frame`
// does. `frame_can_be_replaced` guaranteed there is no frame object to hand ownership to.
inline void finish_replaced_frame(PyThreadState* tstate, InterpreterFrame* frame) {
  tstate->c_recursion_remaining--;
  for (int i = 0; i < frame->stacktop; i++) Py_XDECREF(frame->localsplus[i]);
  frame->stacktop = 0;
  Py_XDECREF(frame->f_locals);
  Py_DECREF(frame->f_funcobj);
  Py_DECREF(frame->f_code);
  tstate->c_recursion_remaining++;
  detail::pop_thread_frame(tstate, frame);
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
