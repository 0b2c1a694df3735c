#include "codegen/graph_call.h"

#include "bytecode/assemble.h"
#include "bytecode/decode.h"
#include "bytecode/opcodes.h"
#include "codegen/code_builder.h"
#include "codegen/new_objects.h"
#include "codegen/prefix.h"
#include "codegen/source_loader.h"
#include "python/errors.h"

namespace bytegraph::codegen {

namespace op = bytecode::op;

void emit_graph_call(CodeBuilder& builder, const std::vector<guards::SourcePtr>& inputs, PyObject* compiled_fn,
                     bool keep_outputs, PyCodeObject* original) {
  builder.before_callable();
  builder.load_const(compiled_fn);
  builder.after_callable();
  for (const guards::SourcePtr& input : inputs) emit_load_source(builder, *input, original);
  builder.call(static_cast<int>(inputs.size()));
  if (keep_outputs) {
    builder.store_fast(kGraphOutputLocal);
  } else {
    builder.emit(op::POP_TOP);
  }
}

py::Ref<> generate_graph_call(PyCodeObject* original, const GraphCall& call) {
  CodeBuilder builder;
  copy_prefix(builder, original);
  builder.set_positions(first_line_positions(original));
  const std::size_t call_start = builder.instructions().size();
  if (call.compiled_fn) {
    const bool keep =
        call.result.uses_graph_outputs() || uses_graph_outputs(call.effects) || uses_graph_outputs(call.new_objects);
    emit_graph_call(builder, call.inputs, call.compiled_fn.get(), keep, original);
  }
  const std::size_t call_end = builder.instructions().size();
  emit_new_objects(builder, call.new_objects, original);
  emit_side_effect_operands(builder, call.effects, original);
  emit_plan(builder, call.result, original);
  emit_side_effect_writes(builder, call.effects);
  builder.return_value();
  append_eager_fallback(builder, call_start, call_end, call.fallback, original);
  bytecode::InstructionList instructions = builder.take();
  return bytecode::assemble(instructions, original);
}

}  // namespace bytegraph::codegen
