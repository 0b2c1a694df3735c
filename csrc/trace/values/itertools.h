// itertools' combinatoric and structural iterators (chain, product, combinations,
// permutations, islice, pairwise, zip_longest, compress, repeat) over values the trace knows.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// `callable(*args, **kwargs)` for one of those itertools classes (or chain.from_iterable),
// over iterables whose items the trace knows without running code (lists, tuples, ranges,
// strings, dicts, sets): an iterator over the items CPython's own itertools yields. Null for
// any other callable.
ValuePtr call_itertools(Tracer& tracer, PyObject* callable, const Args& args, const KwArgs& kwargs);

}  // namespace bytegraph::trace
