// What bytegraph.compile returns for a function: a callable that runs the function with this
// thread's frame callback set, then puts back the callback that was set before.
//
// It is a C type so that a cache hit runs no Python frame of bytegraph's own: the callback's
// compiler is made once, the thread's previous compiler is put back as it was, and the
// settings a call depends on are flags the Python side keeps current:
// - set_stance("force_eager"): calls run with no callback (nothing compiled, no entry used);
// - config.verify_correctness: calls go through the Python verifier given at construction.
// Entering a call also starts a new module generation for torch's GenerationTracker once
// torch._dynamo's mutation_guard is loaded, as torch.compile's calls do.
//
// As a class attribute it binds like a function (a compiled method); functools.update_wrapper
// fills its __dict__ (__wrapped__, __name__, ...).
#pragma once

#include <Python.h>

namespace bytegraph::frame {

// Adds the type to `module` as `CapturedCall(fn, callback, verified_call)`: `verified_call`
// is called as verified_call(*args, **kwargs) while verify_correctness is on. With a callback
// of None (and verified_call None) it runs fn with capture off: what runs a compiled graph
// (its own frames must not be offered to the callback of the code around it), and the
// callback before is put back as it was. With `expected_outputs` n >= 0, a result that is
// not a tuple or list of n values is handed to `bad_outputs` (which raises) until one call
// returns n values. Throws PythonError.
void add_captured_call_type(PyObject* module);

// A new module generation for torch's GenerationTracker, once torch._dynamo's mutation_guard
// is loaded (nothing can read it before). Throws PythonError.
void new_module_generation();

void set_forced_eager(bool forced);
void set_verify_correctness(bool verify);

}  // namespace bytegraph::frame
