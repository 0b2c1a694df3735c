// Writing back what a trace changed in objects that outlive the frame (trace/side_effects.h):
// a list's new items, a dict's new entries, an object's attributes, a global, a cell.
//
// Every target and new value is evaluated into a temporary before anything is written, so
// one write never changes what another reads (a value the trace read from `self.a` before
// assigning `self.a` is the old object); the caller evaluates the frame's result (or its stack
// and locals) between the two steps, for the same reason.
#pragma once

#include <string>
#include <vector>

#include "codegen/code_builder.h"
#include "codegen/output_plan.h"

namespace bytegraph::codegen {

struct SideEffectPlan {
  enum class Kind {
    ReplaceListItems,  // target[:] = value; with a setter (list.__setitem__), setter(target, slice(None), value)
    ReplaceDictItems,  // dict.clear(target); dict.update(target, value); with a setter (a dict
                       // class: OrderedDict), setter.clear(target) and setter.__setitem__ per item
    ReplaceSetItems,   // set.clear(target); set.update(target, value)
    SetAttr,           // setter(target, name, value), or target.name = value when setter is null
    DelAttr,           // delattr(target, name)
    StoreGlobal,       // the frame's global `name` = value
    StoreDeref,        // the frame's cell or free variable `name` = value
    SetItem,           // target[name] = value (another module's globals)
    DelItem,           // dict.pop(target, name, None): a deleted global, there before the call or not
  };
  Kind kind;
  OutputPlan target;  // unused for StoreGlobal and StoreDeref
  std::string name;
  OutputPlan value;   // unused for DelAttr and DelItem
  py::Ref<> setter;   // SetAttr: object.__setattr__ (bypassing a __setattr__ the trace ran), or null;
                      // ReplaceDictItems: the C dict class whose methods store the items, or null;
                      // ReplaceListItems: list.__setitem__ for a list subclass, or null

  SideEffectPlan() = default;
  SideEffectPlan(SideEffectPlan&&) noexcept = default;
  SideEffectPlan& operator=(SideEffectPlan&&) noexcept = default;
  SideEffectPlan(const SideEffectPlan& other)
      : kind(other.kind), target(other.target), name(other.name), value(other.value), setter(other.setter.copy()) {}
  SideEffectPlan& operator=(const SideEffectPlan& other) {
    if (this != &other) *this = SideEffectPlan(other);
    return *this;
  }
};

bool uses_graph_outputs(const std::vector<SideEffectPlan>& effects);

// Visits the Python objects `effect` owns, for the cycle collector (python/gc.h).
void traverse(const SideEffectPlan& effect, py::Visitor& visit);

// Step 1: the operands, into temporaries.
void emit_side_effect_operands(CodeBuilder& builder, const std::vector<SideEffectPlan>& effects,
                               PyCodeObject* code /* borrowed */);
// Step 2: the writes, in order.
void emit_side_effect_writes(CodeBuilder& builder, const std::vector<SideEffectPlan>& effects);

}  // namespace bytegraph::codegen
