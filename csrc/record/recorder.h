// The interpreter's event stream: what each step of the symbolic interpreter did, for
// whoever listens (the step-by-step trace viewer, logs, explain, comptime printing).
//
// The interpreter never builds an event unless a Recorder is attached: every hook it calls
// sits behind one null-pointer test, so tracing without a listener costs nothing more.
// A Recorder is attached per thread (`Attach`), and every trace run on that thread while it
// is attached reports to it: the original frame, each inlined call (with its parent) and
// each resume function after a graph break each open a frame of their own.
#pragma once

#include <Python.h>

#include <string>
#include <utility>
#include <vector>

namespace bytegraph::record {

// A frame the interpreter starts running symbolically.
struct FrameEvent {
  PyObject* code = nullptr;  // borrowed: the frame's code object
  std::string name;          // the code's name
  int parent = -1;           // the calling frame's id (inlined calls), or -1 for a trace's root
};

// The interpreter's state right after one instruction ran (or, for the instruction a trace
// stopped at, the state it was rolled back to).
struct StepEvent {
  int offset = -1;
  std::string opname;
  std::string argrepr;
  int line = -1;                                             // -1: no line
  std::vector<std::string> stack;                            // value reprs, bottom first
  std::vector<std::pair<std::string, std::string>> locals;  // bound locals: name, repr
  // The graph delta: rows of the graph's first `graph_kept` nodes are unchanged since the
  // previous step of this trace; `graph_added` are the rows of the nodes after them. A
  // rollback or a folded op shrinks the graph, so `graph_kept` can be below the last size.
  size_t graph_kept = 0;
  std::vector<std::string> graph_added;  // FX tabular rows (see graph_rows.h)
  std::string note;                      // what happened, in words
};

class Recorder {
 public:
  virtual ~Recorder() = default;
  // Returns the id later events name the frame by.
  virtual int begin_frame(const FrameEvent& frame) = 0;
  virtual void step(int frame, const StepEvent& step) = 0;
  virtual void end_frame(int frame) = 0;
  // One trace finished: its GraphModule (borrowed) and its guards, one line each.
  virtual void end_trace(PyObject* graph_module, const std::vector<std::string>& guards) = 0;
};

// The recorder attached to the calling thread, or null when nobody listens.
Recorder* attached();

// Attaches `recorder` to the calling thread for the lifetime of this object (nesting
// restores the previous one).
class Attach {
 public:
  explicit Attach(Recorder* recorder);
  ~Attach();
  Attach(const Attach&) = delete;
  Attach& operator=(const Attach&) = delete;

 private:
  Recorder* previous_;
};

}  // namespace bytegraph::record
