// Per-thread enable state of the frame hook, and installing the hook itself.
//
// Each thread has its own compiler (null: the hook ignores this thread) and a "busy" depth:
// while bytegraph compiles or checks guards on a thread, the hook stays out of that
// thread's frames (no re-entry). The PEP 523 function is installed on the interpreter only
// while at least one thread has a compiler, and chains to the eval function that was
// installed before it.
//
// The state lives in the thread's state dict (so CPython frees it, with the GIL, when the
// thread ends) and is cached in a C++ thread_local pointer for the hot path.
#pragma once

#include <memory>

#include "frame/frame_compiler.h"
#include "python/ref.h"

namespace bytegraph::frame {

struct ThreadHookState {
  std::shared_ptr<FrameCompiler> compiler;  // null: disabled on this thread
  py::Ref<> handle;  // what Python passed to set_callback (returned as "previous")
  int busy = 0;      // > 0: bytegraph itself is running on this thread
  int run_only = 0;  // > 0: inside a frame past its recompile limit: serve caches, compile nothing
};

// This thread's state, or null if it never enabled the hook. Hot path, never raises.
ThreadHookState* current_thread_state();

// Sets this thread's compiler (null disables) and the Python object that stands for it;
// installs or removes the interpreter's hook as the count of enabled threads changes.
// Returns the previous handle (None if there was none). Throws PythonError.
py::Ref<> set_thread_compiler(std::shared_ptr<FrameCompiler> compiler, py::Ref<> handle);

// Sets this thread's compiler and handle for the scope's life, then puts back the previous
// ones as they were (set_thread_compiler(previous handle) would make a new compiler for it).
// The constructor throws PythonError; the destructor does not throw.
class CompilerScope {
 public:
  CompilerScope(std::shared_ptr<FrameCompiler> compiler, py::Ref<> handle);
  ~CompilerScope();
  CompilerScope(const CompilerScope&) = delete;
  CompilerScope& operator=(const CompilerScope&) = delete;

 private:
  ThreadHookState& state_;
  std::shared_ptr<FrameCompiler> previous_compiler_;
  py::Ref<> previous_handle_;
};

// Number of threads with a compiler set, and whether the hook is installed (for tests).
int enabled_thread_count();
bool hook_installed();

// Raises one of the thread's depths while alive, restoring it on every path out of the scope:
// `busy` keeps the hook off around compiling and guard checks, `run_only` marks a frame past
// its recompile limit (see ThreadHookState).
class DepthScope {
 public:
  explicit DepthScope(int& depth) : depth_(depth) { ++depth_; }
  ~DepthScope() { --depth_; }
  DepthScope(const DepthScope&) = delete;
  DepthScope& operator=(const DepthScope&) = delete;

 private:
  int& depth_;
};

}  // namespace bytegraph::frame
