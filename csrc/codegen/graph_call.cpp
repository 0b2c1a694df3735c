#include "codegen/graph_call.h"

#include "bytecode/assemble.h"
#include "bytecode/decode.h"
#include "bytegraph/opcodes_generated.h"
#include "codegen/code_builder.h"
#include "codegen/prefix.h"
#include "codegen/source_loader.h"
#include "python/errors.h"

namespace bytegraph::codegen {

namespace op = bytecode::op;

namespace {

// The graph's output tuple is kept in a local of its own while the result is rebuilt, so
// any output can be read any number of times in any order.
constexpr const char* kGraphOutputLocal = "___graph_out";

void emit_output(CodeBuilder& builder, const OutputPlan& plan, PyCodeObject* code) {
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
      for (const OutputPlan& item : plan.items) emit_output(builder, item, code);
      builder.build(plan.kind == Kind::Tuple ? op::BUILD_TUPLE : op::BUILD_LIST, static_cast<int>(plan.items.size()));
      return;
    case Kind::Dict:
      for (const OutputPlan& item : plan.items) emit_output(builder, item, code);
      builder.load_const(plan.keys.get());
      builder.build(op::BUILD_CONST_KEY_MAP, static_cast<int>(plan.items.size()));
      return;
  }
  throw InternalError("emit_output: unknown plan kind");
}

}  // namespace

bool OutputPlan::uses_graph_outputs() const {
  if (kind == Kind::GraphOutput) return true;
  for (const OutputPlan& item : items) {
    if (item.uses_graph_outputs()) return true;
  }
  return false;
}

py::Ref<> generate_graph_call(PyCodeObject* original, const GraphCall& call) {
  CodeBuilder builder;
  copy_prefix(builder, original);
  builder.set_positions(first_line_positions(original));
  if (call.compiled_fn) {
    builder.emit(op::PUSH_NULL);
    builder.load_const(call.compiled_fn.get());
    for (const guards::SourcePtr& input : call.inputs) emit_load_source(builder, *input, original);
    builder.call(static_cast<int>(call.inputs.size()));
    if (call.result.uses_graph_outputs()) {
      builder.store_fast(kGraphOutputLocal);
    } else {
      builder.emit(op::POP_TOP);
    }
  }
  emit_output(builder, call.result, original);
  builder.return_value();
  bytecode::InstructionList instructions = builder.take();
  return bytecode::assemble(instructions, original);
}

}  // namespace bytegraph::codegen
