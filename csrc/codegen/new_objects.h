// Objects the trace made (instances of user classes, dicts subclasses like model outputs,
// lists a resumed loop walks while a local holds them too) and that outlive the frame: generated code makes each one once, into a local of its own,
// before it evaluates anything that refers to them (Temp plans), so an object reached from
// two places stays one object and objects may refer to each other.
//
// Made in two steps: all of them allocated with their class's allocator (cls.__new__(cls)),
// then all of them filled, attributes with object.__setattr__ and dict items with the dict
// base's own __setitem__, so neither runs the class's overrides again (the trace already ran
// them: their effects are what is written).
#pragma once

#include <string>
#include <vector>

#include "codegen/code_builder.h"
#include "codegen/output_plan.h"

namespace bytegraph::codegen {

std::string new_object_local(int index);

bool uses_graph_outputs(const std::vector<OutputPlan>& new_objects);

// `new_objects[i]` is the NewObject plan of Temp(i).
void emit_new_objects(CodeBuilder& builder, const std::vector<OutputPlan>& new_objects, PyCodeObject* code /* borrowed */);

}  // namespace bytegraph::codegen
