#include "frame/thread_state.h"

#include "frame/eval_hook.h"
#include "python/errors.h"

namespace bytegraph::frame {
namespace {

constexpr const char* kStateKey = "bytegraph.frame_hook_state";
constexpr const char* kCapsuleName = "bytegraph.frame.ThreadHookState";

// Trivially destructible on purpose: C++ thread_local destructors run after CPython has
// let go of the thread, without the GIL. Ownership is with the capsule below.
thread_local ThreadHookState* t_state = nullptr;
int g_enabled_threads = 0;

void count_enabled(int delta) {
  g_enabled_threads += delta;
  if (g_enabled_threads > 0 && !is_hook_installed()) install_hook();
  if (g_enabled_threads == 0 && is_hook_installed()) uninstall_hook();
}

// Runs when the thread's state dict is cleared (thread exit, interpreter shutdown), with the
// GIL held, possibly from another thread during shutdown.
void destroy_state(PyObject* capsule) {
  auto* state = static_cast<ThreadHookState*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (state == nullptr) {
    PyErr_Clear();
    return;
  }
  if (t_state == state) t_state = nullptr;
  if (state->compiler) count_enabled(-1);
  delete state;
}

ThreadHookState& ensure_thread_state() {
  if (t_state != nullptr) return *t_state;
  PyObject* dict = PyThreadState_GetDict();  // borrowed
  if (dict == nullptr) {
    throw PythonError::make(PyExc_RuntimeError, "bytegraph: this thread has no state dict");
  }
  auto state = std::make_unique<ThreadHookState>();
  py::Ref<> capsule = check(PyCapsule_New(state.get(), kCapsuleName, destroy_state));
  ThreadHookState* raw = state.release();  // the capsule owns it from here
  check_status(PyDict_SetItemString(dict, kStateKey, capsule.get()));
  t_state = raw;
  return *raw;
}

}  // namespace

ThreadHookState* current_thread_state() { return t_state; }

namespace {

// Installs `compiler` and `handle` as the thread's; they become the previous ones. The
// caller releases what it gets back last: destructors may run Python code.
void swap_compiler(ThreadHookState& state, std::shared_ptr<FrameCompiler>& compiler, py::Ref<>& handle) {
  const bool was_enabled = state.compiler != nullptr;
  const bool now_enabled = compiler != nullptr;
  if (!now_enabled) handle = py::Ref<>();
  std::swap(state.compiler, compiler);
  std::swap(state.handle, handle);
  if (was_enabled != now_enabled) count_enabled(now_enabled ? 1 : -1);
}

}  // namespace

py::Ref<> set_thread_compiler(std::shared_ptr<FrameCompiler> compiler, py::Ref<> handle) {
  swap_compiler(ensure_thread_state(), compiler, handle);
  if (!handle) handle = py::Ref<>::newref(Py_None);
  return handle;
}

CompilerScope::CompilerScope(std::shared_ptr<FrameCompiler> compiler, py::Ref<> handle)
    : state_(ensure_thread_state()), previous_compiler_(std::move(compiler)), previous_handle_(std::move(handle)) {
  swap_compiler(state_, previous_compiler_, previous_handle_);
}

CompilerScope::~CompilerScope() { swap_compiler(state_, previous_compiler_, previous_handle_); }

int enabled_thread_count() { return g_enabled_threads; }
bool hook_installed() { return is_hook_installed(); }

}  // namespace bytegraph::frame
