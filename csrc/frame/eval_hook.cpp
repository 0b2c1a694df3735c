#include "frame/eval_hook.h"

#include <cxxabi.h>

#include <memory>

#include "frame/cache_entry.h"
#include "frame/code_cache.h"
#include "frame/cpython_frame.h"
#include "frame/frame_view.h"
#include "frame/thread_state.h"
#include "python/errors.h"
#include "python/import.h"

namespace bytegraph::frame {
namespace {

using py::shim::InterpreterFrame;

py::shim::EvalFrameFunction g_previous_eval = nullptr;
// Remembered at install time: uninstalling can happen while a thread state is being
// cleared at shutdown, when asking for the current interpreter is not safe.
PyInterpreterState* g_interpreter = nullptr;
bool g_installed = false;
bool g_raise_on_compile_error = false;
// Errors meant for the user (a backend that raised, a break under fullgraph) are raised from
// the call instead of falling back: instances of this type (owned; null: none).
PyObject* g_propagated_error_type = nullptr;
HookStats g_stats;

PyObject* evaluate_default(PyThreadState* tstate, InterpreterFrame* frame, int throw_flag) {
  if (g_previous_eval != nullptr) return g_previous_eval(tstate, frame, throw_flag);
  return _PyEval_EvalFrameDefault(tstate, frame, throw_flag);
}

// Only plain function bodies are replaced. Generators, coroutines and async generators own
// their frames (and are resumed through the same eval function); module and class bodies
// run with a locals dict, not argument slots.
bool is_replaceable_code(PyCodeObject* code) {
  constexpr int kGeneratorLike = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR;
  return (code->co_flags & kGeneratorLike) == 0 && (code->co_flags & CO_OPTIMIZED) != 0;
}

bool arguments_present(const FrameView& view) {
  for (PyObject* argument : view.arguments()) {
    if (argument == nullptr) return false;
  }
  return true;
}

// Cache lookup, then the compiler on a miss; bytegraph's own Python code (guards, compiler)
// runs with the hook off for this thread. Throws whatever they throw.
std::shared_ptr<CacheEntry> find_or_compile(ThreadHookState& state, const FrameView& view) {
  DepthScope hook_off(state.busy);
  CurrentFrameScope current(view);
  g_stats.frames_seen++;
  PyObject* backend_key = state.compiler ? state.compiler->backend_key() : nullptr;
  if (CodeCache* cache = CodeCache::find(view.code())) {
    if (std::shared_ptr<CacheEntry> hit = cache->lookup(view.values(), backend_key)) {
      g_stats.cache_hits++;
      return hit;
    }
  }
  g_stats.cache_misses++;
  CodeCache& cache = CodeCache::ensure(view.code());
  cache.count_miss();
  if (state.run_only > 0 || cache.run_only()) return nullptr;  // no compiling here
  // Held locally: the callback may replace this thread's compiler while it runs.
  std::shared_ptr<FrameCompiler> compiler = state.compiler;
  std::optional<CompiledFrame> compiled = compiler->on_cache_miss(view);
  if (!compiled) return nullptr;
  std::shared_ptr<CacheEntry> entry =
      make_cache_entry(view.code(), view.function(), std::move(compiled->code),
                       std::move(compiled->guards), std::move(compiled->keepalive));
  if (backend_key) entry->backend_key = py::Ref<>::newref(backend_key);
  CodeCache::ensure(view.code()).add(entry);
  return entry;
}

void log_compile_failure(PyCodeObject* code, PyObject* error) {
  py::Ref<> logging = import_module("logging");
  py::Ref<> logger = check(PyObject_CallMethod(logging.get(), "getLogger", "s", "bytegraph"));
  py::Ref<> warning = check(PyObject_GetAttrString(logger.get(), "warning"));
  py::Ref<> args = check(Py_BuildValue(
      "(sOOiO)", "bytegraph: could not compile %s (%s:%d), running it unmodified from now on: %r",
      code->co_qualname, code->co_filename, code->co_firstlineno, error));
  py::Ref<> kwargs = check(Py_BuildValue("{s:O}", "exc_info", error));
  check(PyObject_Call(warning.get(), args.get(), kwargs.get()));
}

// With the compile error raised: whether it reaches the caller instead of falling back.
// Interrupts (KeyboardInterrupt, SystemExit: not Exceptions) always do; so do errors of the
// propagated type and errors the compiler marked with kPropagateAttribute.
bool error_reaches_caller() {
  if (g_raise_on_compile_error || !PyErr_ExceptionMatches(PyExc_Exception)) return true;
  if (g_propagated_error_type != nullptr && PyErr_ExceptionMatches(g_propagated_error_type)) return true;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  int marked = value != nullptr ? PyObject_HasAttrString(value, kPropagateAttribute) : 0;
  PyErr_Restore(type, value, traceback);
  return marked == 1;
}

// Called from a catch block. Leaves the error raised (see error_reaches_caller) or marks
// the code skipped, logs once per code object and clears every Python error it saw.
// Not noexcept, like the hook: a thread's forced unwinding passes through (see eval_frame_hook).
void handle_compile_failure(ThreadHookState& state, PyCodeObject* code) {
  g_stats.compile_failures++;
  set_python_error_from_current_exception();
  if (error_reaches_caller()) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  py::Ref<> error = py::Ref<>::steal(value);
  Py_XDECREF(type);
  Py_XDECREF(traceback);
  DepthScope hook_off(state.busy);  // logging runs Python code
  try {
    CodeCache& cache = CodeCache::ensure(code);
    cache.set_skipped(true);
    if (!cache.failure_logged()) {
      cache.set_failure_logged();
      log_compile_failure(code, error ? error.get() : Py_None);
    }
  } catch (abi::__forced_unwind&) {
    throw;  // the thread is exiting (see eval_frame_hook)
  } catch (...) {
    // Logging itself failed (e.g. a broken handler): nothing more we can report safely.
  }
  PyErr_Clear();
}

// Calls the entry's function with the frame's argument slots. A function object other than
// the one the entry was built for (a closure created again, the same code in other globals)
// gets a function built for this call, so its own closure and globals are used.
PyObject* call_entry(const CacheEntry& entry, const FrameView& view) {
  PyObject* callee = entry.function.get();  // borrowed
  auto* built = reinterpret_cast<PyFunctionObject*>(callee);
  auto* original = reinterpret_cast<PyFunctionObject*>(view.function());
  py::Ref<> for_this_call;
  if (built->func_closure != original->func_closure ||
      built->func_globals != original->func_globals) {
    try {
      for_this_call = make_entry_function(entry.positional_code.get(), view.function());
    } catch (PythonError& error) {
      error.restore();
      return nullptr;
    }
    callee = for_this_call.get();
  }
  auto arguments = view.arguments();
  return PyObject_Vectorcall(callee, arguments.data(), arguments.size(), nullptr);
}

// The frame the direct path looks up: the arguments, and the rest of the locals empty, as
// they are in a frame that has not started.
constexpr int kDirectLocals = 32;

}  // namespace

bool call_cached_entry(PyObject* function, PyObject* const* args, size_t nargsf, PyObject* kwnames,
                       PyObject** result) {
  ThreadHookState* state = current_thread_state();
  if (state == nullptr || !state->compiler || state->busy > 0) return false;
  if ((kwnames != nullptr && PyTuple_GET_SIZE(kwnames) > 0) || !PyFunction_Check(function)) return false;
  auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(function));
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (!is_replaceable_code(code) || argument_slot_count(code) != nargs || code->co_argcount != nargs ||
      code->co_nlocalsplus > kDirectLocals || !py::shim::thread_can_replace_calls(PyThreadState_GET())) {
    return false;
  }
  CodeCache* cache = CodeCache::find(code);
  if (cache == nullptr || cache->skipped() || cache->is_own_code() || cache->entries().empty()) return false;
  PyObject* locals[kDirectLocals] = {};
  for (Py_ssize_t i = 0; i < nargs; i++) locals[i] = args[i];
  auto* typed = reinterpret_cast<PyFunctionObject*>(function);
  FrameView view(code, function, typed->func_globals, typed->func_builtins, locals);
  std::shared_ptr<CacheEntry> entry;
  try {
    DepthScope hook_off(state->busy);
    CurrentFrameScope current(view);
    PyObject* backend_key = state->compiler->backend_key();
    entry = cache->lookup(view.values(), backend_key);
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
    // A guard that raised: the hook looks again and reports it as a compile failure would.
    set_python_error_from_current_exception();
    PyErr_Clear();
    return false;
  }
  if (!entry) return false;
  g_stats.frames_seen++;
  g_stats.cache_hits++;
  *result = call_entry(*entry, view);
  return true;
}

namespace {

// Not noexcept, although no C++ exception leaves it: when the interpreter finalizes, a daemon
// thread waiting for the GIL is ended with pthread_exit, whose forced unwinding passes through
// every frame of that thread, this hook's included; a noexcept frame would turn it into
// std::terminate (an abort at exit). Forced unwinds are rethrown wherever the hook catches.
PyObject* eval_frame_hook(PyThreadState* tstate, InterpreterFrame* frame, int throw_flag) {
  ThreadHookState* state = current_thread_state();
  // throw_flag: a generator is being thrown into; it must unwind through its own frame.
  if (state == nullptr || !state->compiler || state->busy > 0 || throw_flag) {
    return evaluate_default(tstate, frame, throw_flag);
  }
  PyCodeObject* code = py::shim::frame_code(frame);
  if (code == nullptr || !is_replaceable_code(code)) return evaluate_default(tstate, frame, throw_flag);
  if (CodeCache* cache = CodeCache::find(code)) {
    if (cache->skipped() || cache->is_own_code()) return evaluate_default(tstate, frame, throw_flag);
  }
  PyObject* function = py::shim::frame_function(frame);  // borrowed
  if (function == nullptr || !PyFunction_Check(function) ||
      !py::shim::frame_can_be_replaced(tstate, frame)) {
    return evaluate_default(tstate, frame, throw_flag);
  }
  FrameView view(code, function, py::shim::frame_globals(frame), py::shim::frame_builtins(frame),
                 py::shim::frame_localsplus(frame));
  if (!arguments_present(view)) return evaluate_default(tstate, frame, throw_flag);

  std::shared_ptr<CacheEntry> entry;
  try {
    entry = find_or_compile(*state, view);
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
    handle_compile_failure(*state, code);
    if (PyErr_Occurred()) {  // re-raise mode: the call fails with the compiler's error
      py::shim::finish_replaced_frame(tstate, frame);
      return nullptr;
    }
  }
  if (!entry) {
    CodeCache* cache = CodeCache::find(code);
    if (cache != nullptr && cache->run_only()) {
      // Past its recompile limit: what this frame calls is not compiled either.
      DepthScope run_only(state->run_only);
      return evaluate_default(tstate, frame, throw_flag);
    }
    return evaluate_default(tstate, frame, throw_flag);
  }
  PyObject* result = call_entry(*entry, view);
  py::shim::finish_replaced_frame(tstate, frame);
  return result;
}

}  // namespace

void install_hook() {
  if (g_installed) return;
  PyInterpreterState* interp = PyInterpreterState_Get();
  g_interpreter = interp;
  py::shim::EvalFrameFunction current = _PyInterpreterState_GetEvalFrameFunc(interp);
  if (current != eval_frame_hook) g_previous_eval = current;
  _PyInterpreterState_SetEvalFrameFunc(interp, eval_frame_hook);
  g_installed = true;
}

void uninstall_hook() {
  if (!g_installed) return;
  PyInterpreterState* interp = g_interpreter;
  // Someone chained after us: leave their function in place (it still calls ours, which
  // defers to the previous one for every thread now that none is enabled).
  if (_PyInterpreterState_GetEvalFrameFunc(interp) != eval_frame_hook) return;
  _PyInterpreterState_SetEvalFrameFunc(
      interp, g_previous_eval != nullptr ? g_previous_eval : _PyEval_EvalFrameDefault);
  g_installed = false;
}

bool is_hook_installed() { return g_installed; }
void set_raise_on_compile_error(bool raise) { g_raise_on_compile_error = raise; }

void set_propagated_error_type(PyObject* type) {
  Py_XINCREF(type);
  Py_XSETREF(g_propagated_error_type, type);
}
bool raise_on_compile_error() { return g_raise_on_compile_error; }
const HookStats& hook_stats() { return g_stats; }
void reset_hook_stats() { g_stats = HookStats{}; }

}  // namespace bytegraph::frame
