// Profiler context managers in a traced function (see null_context.h).
#include "trace/values/null_context.h"

#include "guards/leaf_guard.h"
#include "trace/tracer.h"

namespace bytegraph::trace {

ValuePtr NullContextValue::call(Tracer&, const Args&, const KwArgs&) {
  // The arguments (activities, a schedule, a label) configure profiling, which compiled code
  // does not do.
  if (!is_class_) unsupported("unsupported_call", "calling " + repr());
  return std::make_shared<NullContextValue>(cls_.copy(), false);
}

std::optional<std::pair<ValuePtr, ValuePtr>> NullContextValue::enter_with(Tracer&) {
  if (is_class_) unsupported("unsupported_context", "`with` on the class " + repr());
  return std::pair<ValuePtr, ValuePtr>{std::make_shared<NullContextExitValue>(guards::grad_mode_enabled_now()),
                                       shared_from_this()};
}

ValuePtr NullContextExitValue::call(Tracer&, const Args&, const KwArgs&) { return make_bool(false); }

bool NullContextExitValue::re_enterable(Tracer&) const { return guards::grad_mode_enabled_now() == previous(); }

}  // namespace bytegraph::trace
