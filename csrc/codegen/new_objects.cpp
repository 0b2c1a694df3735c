#include "codegen/new_objects.h"
#include "python/type_dict.h"

#include "bytecode/opcodes.h"
#include "python/errors.h"

namespace bytegraph::codegen {

std::string new_object_local(int index) { return "___object" + std::to_string(index); }

bool uses_graph_outputs(const std::vector<OutputPlan>& new_objects) {
  for (const OutputPlan& plan : new_objects)
    if (plan.uses_graph_outputs()) return true;
  return false;
}

namespace {

PyObject* object_setattr() {
  return py::own_type_attribute(&PyBaseObject_Type, "__setattr__");  // borrowed, lives forever
}

}  // namespace

void emit_new_objects(CodeBuilder& builder, const std::vector<OutputPlan>& new_objects, PyCodeObject* code) {
  for (size_t i = 0; i < new_objects.size(); ++i) {
    const OutputPlan& plan = new_objects[i];
    if (plan.kind != OutputPlan::Kind::NewObject) throw InternalError("emit_new_objects: not a NewObject plan");
    builder.before_callable();
    builder.load_const(plan.make.get());
    builder.after_callable();
    builder.load_const(plan.constant.get());
    if (plan.made_from) builder.load_const(plan.made_from.get());
    builder.call(plan.made_from ? 2 : 1);
    builder.store_fast(new_object_local(static_cast<int>(i)));
  }
  for (size_t i = 0; i < new_objects.size(); ++i) {
    const OutputPlan& plan = new_objects[i];
    const std::string local = new_object_local(static_cast<int>(i));
    const size_t attributes = plan.names.size();
    for (size_t a = 0; a < attributes; ++a) {
      builder.before_callable();
      builder.load_const(object_setattr());
      builder.after_callable();
      builder.load_fast(local);
      builder.load_const(interned(plan.names[a]).get());
      emit_plan(builder, plan.items[a], code);
      builder.call(3);
      builder.pop_top();
    }
    if (plan.extend) {
      builder.before_callable();
      builder.load_const(plan.extend.get());
      builder.after_callable();
      builder.load_fast(local);
      for (size_t k = attributes; k < plan.items.size(); ++k) emit_plan(builder, plan.items[k], code);
      builder.build(bytecode::op::BUILD_TUPLE, static_cast<int>(plan.items.size() - attributes));
      builder.call(2);
      builder.pop_top();
      continue;
    }
    if (!plan.keys) continue;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(plan.keys.get()); ++k) {
      builder.before_callable();
      builder.load_const(plan.set_item.get());
      builder.after_callable();
      builder.load_fast(local);
      builder.load_const(PyTuple_GET_ITEM(plan.keys.get(), k));
      emit_plan(builder, plan.items[attributes + static_cast<size_t>(k)], code);
      builder.call(3);
      builder.pop_top();
    }
  }
}

}  // namespace bytegraph::codegen
