// What plans own, for the cycle collector: a trace result keeps its plans, and their
// constants can be any object of the user's (a function whose globals hold the result).
#include "codegen/output_plan.h"
#include "codegen/side_effects.h"

namespace bytegraph::codegen {

void traverse(const OutputPlan& plan, py::Visitor& visit) {
  visit(plan.constant);
  visit(plan.keys);
  visit(plan.make);
  visit(plan.set_item);
  visit(plan.extend);
  visit(plan.made_from);
  guards::traverse_source(plan.source, visit);
  for (const OutputPlan& item : plan.items) traverse(item, visit);
}

void traverse(const SideEffectPlan& effect, py::Visitor& visit) {
  traverse(effect.target, visit);
  traverse(effect.value, visit);
  visit(effect.setter);
}

}  // namespace bytegraph::codegen
