#include "bytecode/opcodes.h"
#include "codegen/new_objects.h"
#include "codegen/output_plan.h"
#include "codegen/source_loader.h"
#include "python/errors.h"

namespace bytegraph::codegen {

namespace op = bytecode::op;

OutputPlan::OutputPlan(const OutputPlan& other)
    : kind(other.kind), index(other.index), constant(other.constant.copy()), source(other.source), items(other.items),
      attribute(other.attribute), names(other.names), keys(other.keys.copy()), make(other.make.copy()),
      set_item(other.set_item.copy()), extend(other.extend.copy()), made_from(other.made_from.copy()) {}

OutputPlan& OutputPlan::operator=(const OutputPlan& other) {
  if (this != &other) *this = OutputPlan(other);
  return *this;
}

OutputPlan OutputPlan::graph_output(int index) {
  OutputPlan plan;
  plan.kind = Kind::GraphOutput;
  plan.index = index;
  return plan;
}

OutputPlan OutputPlan::of_constant(PyObject* value) {
  OutputPlan plan;
  plan.kind = Kind::Constant;
  plan.constant = py::Ref<>::newref(value);
  return plan;
}

OutputPlan OutputPlan::of_source(guards::SourcePtr source) {
  OutputPlan plan;
  plan.kind = Kind::Source;
  plan.source = std::move(source);
  return plan;
}

OutputPlan OutputPlan::null() {
  OutputPlan plan;
  plan.kind = Kind::Null;
  return plan;
}

bool OutputPlan::uses_graph_outputs() const {
  if (kind == Kind::GraphOutput) return true;
  for (const OutputPlan& item : items) {
    if (item.uses_graph_outputs()) return true;
  }
  return false;
}

void emit_enter_context(CodeBuilder& builder, PyObject* cls) {
  builder.before_callable();
  builder.load_const(cls);
  builder.after_callable();
  builder.call(0);
  builder.emit(op::BEFORE_WITH);
  builder.emit(op::POP_TOP);  // what __enter__ returned
}

namespace {

// callable(*items), or callable(tuple(items)) with `as_tuple`.
void emit_call(CodeBuilder& builder, PyObject* callable, const std::vector<OutputPlan>& items, PyCodeObject* code,
               bool as_tuple) {
  builder.before_callable();
  builder.load_const(callable);
  builder.after_callable();
  for (const OutputPlan& item : items) emit_plan(builder, item, code);
  if (as_tuple) builder.build(op::BUILD_TUPLE, static_cast<int>(items.size()));
  builder.call(as_tuple ? 1 : static_cast<int>(items.size()));
}

}  // namespace

void emit_plan(CodeBuilder& builder, const OutputPlan& plan, PyCodeObject* code) {
  using Kind = OutputPlan::Kind;
  switch (plan.kind) {
    case Kind::GraphOutput: {
      builder.load_fast(kGraphOutputLocal);
      py::Ref<> index = check(PyLong_FromLong(plan.index));
      builder.subscript_const(index.get());
      return;
    }
    case Kind::Constant:
      builder.load_const(plan.constant.get());
      return;
    case Kind::Source:
      emit_load_source(builder, *plan.source, code);
      return;
    case Kind::Tuple:
    case Kind::List:
      for (const OutputPlan& item : plan.items) emit_plan(builder, item, code);
      builder.build(plan.kind == Kind::Tuple ? op::BUILD_TUPLE : op::BUILD_LIST, static_cast<int>(plan.items.size()));
      return;
    case Kind::NamedTuple:
      emit_call(builder, plan.constant.get(), plan.items, code, true);
      return;
    case Kind::Call:
      emit_call(builder, plan.constant.get(), plan.items, code, false);
      return;
    case Kind::Set:
      if (plan.constant) {  // frozenset(items)
        emit_call(builder, plan.constant.get(), plan.items, code, true);
        return;
      }
      for (const OutputPlan& item : plan.items) emit_plan(builder, item, code);
      builder.build(op::BUILD_SET, static_cast<int>(plan.items.size()));
      return;
    case Kind::Dict:
      for (const OutputPlan& item : plan.items) emit_plan(builder, item, code);
      builder.load_const(plan.keys.get());
      builder.build(op::BUILD_CONST_KEY_MAP, static_cast<int>(plan.items.size()));
      return;
    case Kind::Null:
      builder.emit(op::PUSH_NULL);
      return;
    case Kind::Iterator:
      if (plan.constant) {  // made by a function (a list's own iterator, from its index)
        emit_call(builder, plan.constant.get(), plan.items, code, false);
        return;
      }
      // The loop only ever calls next() on it: an iterator over the remaining items
      // behaves the same from here on.
      for (const OutputPlan& item : plan.items) emit_plan(builder, item, code);
      builder.build(op::BUILD_TUPLE, static_cast<int>(plan.items.size()));
      builder.emit(op::GET_ITER);
      return;
    case Kind::MakeFunction:
      // MAKE_FUNCTION pops, top first: code, closure, kwdefaults, defaults.
      for (const OutputPlan& item : plan.items) emit_plan(builder, item, code);
      for (const std::string& name : plan.names) builder.load_cell(name);
      if (!plan.names.empty()) builder.build(op::BUILD_TUPLE, static_cast<int>(plan.names.size()));
      builder.load_const(plan.constant.get());
      builder.make_function(plan.index);
      return;
    case Kind::BoundMethod:  // types.MethodType(function, self)
      emit_call(builder, plan.constant.get(), plan.items, code, false);
      return;
    case Kind::EnterContext:
      emit_enter_context(builder, plan.constant.get());
      return;
    case Kind::Attr:
      emit_plan(builder, plan.items.at(0), code);
      builder.load_attr(plan.attribute);
      return;
    case Kind::GradModeExit:
    case Kind::ContextExit:
      throw InternalError("emit_plan: a block's exit is entered again, not rebuilt");
    case Kind::Temp:
      builder.load_fast(new_object_local(plan.index));
      return;
    case Kind::NewObject:
      throw InternalError("emit_plan: new objects are made by emit_new_objects");
  }
  throw InternalError("emit_plan: unknown plan kind");
}

}  // namespace bytegraph::codegen
