// How generated code rebuilds a Python value after the compiled graph has run: from the
// graph's outputs, constants, and values re-read from their sources.
#pragma once

#include <vector>

#include "guards/source.h"
#include "python/ref.h"

namespace bytegraph::codegen {

struct OutputPlan {
  enum class Kind { GraphOutput, Constant, Source, Tuple, List, Dict };
  Kind kind = Kind::Constant;
  int index = -1;                // GraphOutput: position in the graph's output tuple
  py::Ref<> constant;            // Constant
  guards::SourcePtr source;      // Source
  std::vector<OutputPlan> items; // Tuple, List, Dict (values)
  py::Ref<> keys;                // Dict: a tuple of constant keys, in insertion order

  bool uses_graph_outputs() const;
};

}  // namespace bytegraph::codegen
