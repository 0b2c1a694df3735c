// How a frame is split at a graph break (docs/graph-breaks.md): which resume functions the
// generated code calls, how open grad-mode blocks are left and entered again, and when the
// frame must run eagerly instead.
#pragma once

#include <Python.h>

#include <string>

#include "codegen/break_call.h"
#include "codegen/break_site.h"
#include "trace/trace.h"

namespace bytegraph::codegen {

struct FrameSplit {
  std::string eager_reason;  // non-empty: the frame cannot be split exactly, run it eagerly
  BreakSite site;
  BreakCall call;  // everything but the graph's inputs and compiled function
};

// `code`: the code being replaced (an original or a resume function), traced into `result`,
// which stopped at a break. Makes (or reuses) the continuations' resume functions.
FrameSplit plan_split(PyCodeObject* code /* borrowed */, const trace::TraceResult& result);

}  // namespace bytegraph::codegen
