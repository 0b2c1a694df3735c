// Python adapters for the compile path, used by tests and (for now) the Python layer:
// - PythonCallbackCompiler: a FrameCompiler that calls `callback(frame_info)`, which returns
//   None (run unmodified), a code object, or (code, guard_fn_or_None[, keepalive]).
// - PythonGuardTree: a GuardTree whose check calls `guard_fn(frame_info) -> bool`. Slow
//   (builds a frame_info per check); for tests and as a fallback.
// frame_info is a types.SimpleNamespace: f_code, f_globals, f_builtins, f_locals (arguments
// by name plus bound free variables) and function (for Python guards: taken from the frame
// the hook is checking on this thread; None when a guard is checked outside the hook).
#pragma once

#include <memory>
#include <optional>

#include "frame/frame_compiler.h"
#include "guards/guard_set.h"
#include "python/ref.h"

namespace bytegraph::frame {

class PythonCallbackCompiler : public FrameCompiler {
 public:
  // `callback.backend_key`, when it has one, keys the entries it makes (frame_compiler.h).
  explicit PythonCallbackCompiler(py::Ref<> callback);
  std::optional<CompiledFrame> on_cache_miss(const FrameView& frame) override;
  PyObject* backend_key() const override { return backend_key_.get(); }

 private:
  py::Ref<> callback_;
  py::Ref<> backend_key_;
};

class PythonGuardTree : public guards::GuardTree {
 public:
  // `code` is borrowed: the tree lives in that code object's cache, which dies with it.
  PythonGuardTree(py::Ref<> guard_fn, PyCodeObject* code)
      : guard_fn_(std::move(guard_fn)), code_(code) {}
  bool check(const guards::FrameValues& frame) const override;
  std::string explain_failure(const guards::FrameValues& frame) const override;
  std::vector<std::string> describe() const override;
  // One opaque Python check, whatever it tests.
  std::size_t guard_count() const override { return 1; }

 private:
  py::Ref<> guard_fn_;
  PyCodeObject* code_;  // borrowed
};

// How a callback's guard object becomes a C++ tree without a Python call per check: the
// bindings register a converter for bytegraph._C.guards.GuardTree handles (the core cannot
// see nanobind types). The converter returns null for objects it does not know.
using GuardObjectConverter = std::unique_ptr<guards::GuardTree> (*)(PyObject* object);
void register_guard_object_converter(GuardObjectConverter converter);

// A guard tree for `code` from a callback's guard object: null for None, the tree of a
// GuardTree handle (moved out of it), or a PythonGuardTree around a callable; TypeError
// (as PythonError) otherwise.
std::unique_ptr<guards::GuardTree> guard_tree_from_python(PyObject* guard, PyCodeObject* code /* borrowed */);

// Turns a callback's result into a CompiledFrame (nullopt for None). Throws PythonError
// (TypeError) for anything else.
std::optional<CompiledFrame> compiled_frame_from_python(PyObject* result, PyCodeObject* code);

}  // namespace bytegraph::frame
