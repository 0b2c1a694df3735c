// A Recorder that forwards each event to a Python object in one call with plain values
// (ints, strs, lists of str, a dict of str), so a Python adapter can build the viewer's
// Trace. The object's methods:
//   begin_frame(name: str, code, parent: int | None) -> int
//   step(frame: int, offset: int, opname: str, argrepr: str, line: int, stack: list[str],
//        locals: dict[str, str], graph_kept: int, graph_added: list[str], note: str)
//   end_frame(frame: int)
//   end_trace(graph_module, guards: list[str])
#pragma once

#include "python/ref.h"
#include "record/recorder.h"

namespace bytegraph::record {

class PythonRecorder final : public Recorder {
 public:
  explicit PythonRecorder(py::Ref<> target) : target_(std::move(target)) {}

  int begin_frame(const FrameEvent& frame) override;
  void step(int frame, const StepEvent& step) override;
  // Never throws (it runs while frames unwind): a failure is reported as unraisable.
  void end_frame(int frame) override;
  void end_trace(PyObject* graph_module, const std::vector<std::string>& guards) override;

  PyObject* target() const { return target_.get(); }

 private:
  py::Ref<> target_;
};

}  // namespace bytegraph::record
