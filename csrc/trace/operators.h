// Python operators on symbolic values: folded on constants, recorded on tensors
// (`a + b` is a call_function node on operator.add, as Dynamo records it).
#pragma once

#include "trace/tracer.h"

namespace bytegraph::trace {

// operator.<name> (add, iadd, lt, getitem, ...), looked up once. Borrowed, lives forever.
PyObject* operator_function(const char* name);

ValuePtr apply_operator(Tracer& tracer, PyObject* function, const Args& operands);
// Python's operator protocol on instances of user classes with Python special methods
// (operator_protocol.cpp); null where no operand's class defines one for `function`.
ValuePtr user_class_operator(Tracer& tracer, PyObject* function, const Args& operands);
// Whether `function` is one of operator's functions for an operator with special methods
// (operator.sub, operator.iadd, operator.lt, operator.neg): called, it acts as the operator.
bool is_protocol_operator(PyObject* function);
// Whether every argument is a constant or a container of constants (foldable).
bool all_constant(const Args& args, const KwArgs& kwargs = {});
// The real Python object of a constant or a container of constants; null otherwise.
py::Ref<> constant_of(const ValuePtr& value);
// Calls `function` for real on constant arguments: the new reference, or null with the
// Python error set.
PyObject* call_with_constants(PyObject* function, const Args& args, const KwArgs& kwargs = {});
// Calls `function` for real on constant arguments and wraps the result as a constant.
ValuePtr fold(PyObject* function, const Args& args, const KwArgs& kwargs = {});
// Wraps the real result of a folded call (lists and dicts become symbolic containers).
ValuePtr from_folded(py::Ref<> result);
// Identity comparison (`is`), when it is decidable from what the tracer knows.
// `a is b`, decided at trace time; real objects compared by identity get identity guards.
bool same_object(Tracer& tracer, const ValuePtr& a, const ValuePtr& b);
// The items of a mapping that is no dict (a collections.abc.Mapping subclass instance) as
// dict(m), dict.update(m) and f(**m) read them: m.keys(), then m[key] for each, inlined; null
// for a value without a keys method.
std::shared_ptr<DictValue> mapping_items(Tracer& tracer, const ValuePtr& mapping);
// `needle in haystack` on known containers.
bool contains(Tracer& tracer, const ValuePtr& haystack, const ValuePtr& needle);
// Whether `in` on a sequence holding `item` finds `needle` (identity, then ==).
bool member_equal(Tracer& tracer, const ValuePtr& item, const ValuePtr& needle);

}  // namespace bytegraph::trace
