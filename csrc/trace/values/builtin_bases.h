// The methods of a builtin container base (dict, set, frozenset) on an instance of a user
// subclass: see values/builtin_bases.cpp.
#pragma once

#include <memory>
#include <string>

#include "trace/value.h"

namespace bytegraph::trace {

// The base's method `name` applied to the subclass instance's items (dict.update(obj, ...),
// super().add(x), set.__or__(obj, other)); null where the base has no such method here.
ValuePtr call_base_method(Tracer& tracer, const std::shared_ptr<ObjectValue>& self, const std::string& name,
                          const Args& args);
ValuePtr call_set_base_method(Tracer& tracer, const std::shared_ptr<ObjectValue>& self, const std::string& name,
                              const Args& args);

}  // namespace bytegraph::trace
