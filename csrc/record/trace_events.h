// One trace's side of the event stream: turns the interpreter's frames and instructions
// into Recorder events (frame ids, state snapshots as reprs, graph deltas, notes). A Tracer
// holds one only while a Recorder is attached; the interpreter reaches it through a
// null-pointer test, so nothing here runs when nobody listens.
#pragma once

#include <string>
#include <vector>

#include "record/graph_rows.h"
#include "record/recorder.h"
#include "trace/tracer.h"

namespace bytegraph::record {

class TraceEvents {
 public:
  TraceEvents(Recorder& recorder, trace::Tracer& tracer);

  // A frame starts running (the trace's root, or an inlined call inside the current frame).
  void begin_frame(const trace::FrameState& frame);
  void end_frame();
  // The instruction `inst` of the innermost frame completed.
  void step(const trace::FrameState& frame, const bytecode::Instruction& inst);
  // The trace stopped at `inst`: `frame` holds the state it was rolled back to (the
  // outermost frame) or the state it stopped in (inlined frames on the way out).
  void break_step(const trace::FrameState& frame, const bytecode::Instruction& inst, const std::string& kind,
                  const std::string& message);
  void end_trace(PyObject* graph_module, const std::vector<std::string>& guards);

 private:
  StepEvent snapshot(const trace::FrameState& frame, const bytecode::Instruction& inst);
  std::vector<std::string> new_guards();

  struct OpenFrame {
    int id;
    std::string inlined;  // the callee this frame's current instruction inlined
  };
  Recorder& recorder_;
  trace::Tracer& tracer_;
  GraphRows rows_;
  std::vector<OpenFrame> open_;
  size_t guards_seen_ = 0;
};

// Scopes a frame's begin/end events; does nothing without a TraceEvents.
class FrameScope {
 public:
  FrameScope(TraceEvents* events, const trace::FrameState& frame) : events_(events) {
    if (events_) events_->begin_frame(frame);
  }
  ~FrameScope() {
    if (events_) events_->end_frame();
  }
  FrameScope(const FrameScope&) = delete;
  FrameScope& operator=(const FrameScope&) = delete;

 private:
  TraceEvents* events_;
};

}  // namespace bytegraph::record
