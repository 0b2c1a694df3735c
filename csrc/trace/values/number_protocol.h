// Builtins that reach a number through Python's number protocol: math.ceil, math.floor and
// math.trunc (the class's __ceil__ / __floor__ / __trunc__, else its __float__ or __index__),
// operator.index, bin, oct and hex (its __index__). On an instance of a user class the Python
// special methods are inlined, found on the type as CPython's special lookup finds them (never
// on the instance), and their results checked as CPython checks them, so the trace raises the
// same exceptions with the same words, where the code can catch them.
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// The result of calling `function` (a builtin value), or null when it is not one of these or
// its arguments are for the general paths (constants of builtin types fold there).
ValuePtr call_number_builtin(Tracer& tracer, PyObject* function, const Args& args, const KwArgs& kwargs);

// operator.index(value), as CPython's PyNumber_Index: a constant exact int. A symbolic int is
// specialized (the callers run on concrete numbers); a value of a class this cannot read is
// a break.
ValuePtr index_of(Tracer& tracer, const ValuePtr& value);

// A call with the wrong arguments (count, keywords) raises what the real function raises for
// them: the same call made with None in every place, which fails before it reads any.
[[noreturn]] void raise_bad_arguments(PyObject* function, const Args& args, const KwArgs& kwargs);

// A C API call the tracer made for real on builtin values failed (the Python error is set): that
// exception, raised in the trace as the real call would raise it.
[[noreturn]] void raise_current_error(const std::string& what);

// type(value).<name> as a special method is looked up: the function found on the class (its
// own or a base's; borrowed), or null where no class in the MRO has it. Where none has it and
// the class is a user class, the trace is guarded on that staying so.
PyObject* special_method(Tracer& tracer, const ValuePtr& value, const char* name);

// The Python function `special` (found by special_method) called on `value`, guarded where
// its class holds it.
ValuePtr inline_special_method(Tracer& tracer, const ValuePtr& value, const char* name, PyObject* special);

}  // namespace bytegraph::trace
