// operator.length_hint(obj, default=0), as CPython's PyObject_LengthHint: len(obj) where its
// class has __len__ (a TypeError from it falls through), else its __length_hint__ (a TypeError
// or NotImplemented gives the default), else the default. Python methods are inlined; a list
// iterator's hint is the items it has left.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// The result of operator.length_hint(*args, **kwargs): a constant int.
ValuePtr call_length_hint(Tracer& tracer, const Args& args, const KwArgs& kwargs);

}  // namespace bytegraph::trace
