// functools.lru_cache / functools.cache wrappers read from outside the frame. On constant
// arguments the real cache answers at trace time (an immutable answer becomes a constant);
// otherwise a call inlines the function it wraps, as torch.compile does: the compiled code
// computes the result instead of looking it up (a warning says so once per wrapper), which is
// what the cache returns for the pure functions it is meant for.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// An lru_cache wrapper (pinned by identity: its wrapped function is fixed at creation); null
// for any other object.
ValuePtr wrap_cached_function(Tracer& tracer, PyObject* real, const guards::SourcePtr& source);

}  // namespace bytegraph::trace
