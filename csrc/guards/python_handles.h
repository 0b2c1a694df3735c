// The Python-side handles of guard objects, shared by the bindings of every stage that
// passes sources or trees across the Python boundary (guards, codegen, frame, trace).
#pragma once

#include <memory>
#include <stdexcept>

#include "guards/guard_set.h"
#include "guards/source.h"

namespace bytegraph {

// bytegraph._C.guards.Source: sources are shared and immutable.
struct PySource {
  guards::SourcePtr source;
};

// bytegraph._C.guards.GuardTree: owns its tree until a cache entry takes it over.
struct PyGuardTree {
  std::unique_ptr<guards::GuardTree> tree;

  const guards::GuardTree& get() const {
    if (!tree) throw std::invalid_argument("this GuardTree was moved into a cache entry");
    return *tree;
  }
};

}  // namespace bytegraph
