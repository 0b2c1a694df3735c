// Builtins that iterate (iter, next, any, all, sorted, reversed, map, filter, zip and
// enumerate over lazy iterators, set, frozenset, str.join over an iterator): the part of
// BuiltinValue::call (values/builtins.cpp) that consumes iterables item by item.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// The result of calling the builtin `function`, or null when it is not one of these (or
// these arguments are for the general paths: folding constants, eager zip/enumerate).
ValuePtr call_iteration_builtin(Tracer& tracer, PyObject* function, const Args& args, const KwArgs& kwargs);

}  // namespace bytegraph::trace
