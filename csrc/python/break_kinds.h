// The registry of graph-break kinds: every `Unsupported` the core throws names one of these
// stable kinds, and each kind carries the plain-language hint users see (fullgraph errors,
// explain(), graph-break logs). A kind missing here fails the C++ unit test that scans the
// sources for `unsupported("kind", ...)`; at run time it only gets the generic hint.
#pragma once

#include <span>
#include <string_view>

namespace bytegraph {

struct BreakKind {
  std::string_view name;
  std::string_view hint;
};

// Every registered kind, sorted by name.
std::span<const BreakKind> break_kinds();

// The registered kind called `name`, or null.
const BreakKind* find_break_kind(std::string_view name);

// The hint for `kind`; a generic one for a kind that is not registered.
std::string_view break_hint(std::string_view kind);

}  // namespace bytegraph
