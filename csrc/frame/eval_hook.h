// The PEP 523 eval-frame function.
//
// For each frame it either defers to the previously installed eval function ("default
// evaluation") or produces the frame's result by calling a cache entry's function with the
// frame's argument slots. Default evaluation when: the thread has no compiler; bytegraph is
// busy on this thread (compiling, checking guards); `throw_flag` is set; the code is a
// generator, coroutine or async generator, or not a function body (module, class body);
// bytegraph made the code; the code is marked skipped; or the frame cannot be replaced
// (see the version shim). The hook never lets a C++ exception escape and never leaves a
// Python error set when it falls back.
#pragma once

#include <Python.h>

#include "python/errors.h"

namespace bytegraph::frame {

void install_hook();
void uninstall_hook();
bool is_hook_installed();

// What a compile failure (the compiler raised, or returned something unusable) does: log
// once, mark the code skipped and run the frame unmodified; or leave the error raised so
// that the call fails with it. The error reaches the caller when
// - it is not an Exception (KeyboardInterrupt, SystemExit): always;
// - it is an instance of the propagated type (an exception class or a tuple of them);
// - the exception carries the attribute kPropagateAttribute (the compile path's choice,
//   e.g. per bytegraph.config.suppress_errors);
// - raise_on_compile_error is on (for tests: every failure raises).
void set_propagated_error_type(PyObject* type /* borrowed */);
void set_raise_on_compile_error(bool raise);
bool raise_on_compile_error();

// A compiled function's wrapper calling `function` with plain positional arguments: on a
// cache hit the entry's function is called directly, without making the frame that the hook
// would make only to replace it (no instruction of it ever runs). Returns false, having done
// nothing and set no error, wherever the hook must decide: a miss, keyword arguments, a call
// the hook would evaluate unmodified. Otherwise *result is the call's result (null: raised).
bool call_cached_entry(PyObject* function, PyObject* const* args, size_t nargsf, PyObject* kwnames,
                       PyObject** result);

// Counters for tests and introspection.
struct HookStats {
  unsigned long long frames_seen = 0;   // frames that reached the cache lookup
  unsigned long long cache_hits = 0;
  unsigned long long cache_misses = 0;
  unsigned long long compile_failures = 0;
};
const HookStats& hook_stats();
void reset_hook_stats();

}  // namespace bytegraph::frame
