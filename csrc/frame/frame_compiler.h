// The compile path's side of the frame hook: what runs on a cache miss.
//
// The hook calls `on_cache_miss` with the hook turned off for this thread (so whatever
// Python the compiler runs is not intercepted), then
// - nullopt: runs the frame unmodified (call `mark_skip(frame.code())` first to stop being
//   asked about this code object);
// - a CompiledFrame: adds it to the code's cache (checking the invariants of
//   cache_entry.h) and runs it like a cache hit.
// Any exception (PythonError, Unsupported, InternalError, ...) is logged once per code
// object to the "bytegraph" logger, the code is marked skipped and the frame runs
// unmodified, unless `set_raise_on_compile_error(true)`.
#pragma once

#include <memory>
#include <optional>

#include "frame/frame_view.h"
#include "guards/guard_set.h"
#include "python/ref.h"

namespace bytegraph::frame {

struct CompiledFrame {
  py::Ref<> code;                              // the replacement code object
  std::unique_ptr<guards::GuardTree> guards;   // null: always matches
  py::Ref<> keepalive;                         // kept alive with the entry; may be null
};

class FrameCompiler {
 public:
  virtual ~FrameCompiler() = default;
  virtual std::optional<CompiledFrame> on_cache_miss(const FrameView& frame) = 0;
  // What the entries it makes are compiled for (one object per backend and its settings,
  // compared by identity); entries made for another backend never match (cache_entry.h).
  virtual PyObject* backend_key() const { return nullptr; }
};

}  // namespace bytegraph::frame
