// Turning values that are not constants into strings: str(), repr(), f-strings, `%`.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// str(value) ('s'), repr(value) ('r') or ascii(value) ('a'), folded to a constant string:
// containers of constants, classes, Python modules and builtin functions (whose text depends
// on nothing but the object, pinned by identity). A tensor's text is its data: a break.
ValuePtr stringify(Tracer& tracer, const ValuePtr& value, char conversion);
// The real object whose text stands for `value` in str(), repr() or format() (f-strings):
// a constant, a container of constants, a class, module or builtin function (pinned by
// identity). Anything else is a break; a tensor's text is its data (data_dependent_op).
py::Ref<> formattable_object(Tracer& tracer, const ValuePtr& value, const char* what);
// str() ('s') or repr() ('r') of an instance of a user class that defines __str__ or __repr__
// in Python: the method inlined (its result a constant string); null for any other value. For
// 'f' (format(value) with no spec), the same as 's' where __format__ is object's.
ValuePtr object_text(Tracer& tracer, const ValuePtr& value, char conversion);
// format(value, spec).
ValuePtr format_value(Tracer& tracer, const ValuePtr& value, const ValuePtr& spec);
// `"..." % args` when the left operand is a constant string and the arguments are not all
// constants; null for any other operator use.
ValuePtr format_operator(Tracer& tracer, PyObject* function, const Args& operands);

}  // namespace bytegraph::trace
