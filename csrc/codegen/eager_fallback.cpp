#include "codegen/eager_fallback.h"

#include <memory>

#include "bytecode/clone.h"
#include "bytecode/opcodes.h"
#include "codegen/prefix.h"
#include "python/errors.h"

namespace bytegraph::codegen {

namespace op = bytecode::op;

namespace {

constexpr const char* kFailureLocal = "___graph_failure";

// The first instruction after the prefix generated code copies (copy_prefix): the body.
std::size_t body_start(const bytecode::InstructionList& instructions) {
  for (std::size_t i = 0; i < instructions.size(); ++i)
    if (instructions[i]->opcode == op::RESUME) return i + 1;
  throw InternalError("eager fallback: the original code has no RESUME");
}

}  // namespace

void append_eager_fallback(CodeBuilder& builder, std::size_t first, std::size_t end, const EagerFallback& fallback,
                           PyCodeObject* original) {
  if (!fallback.enabled() || first >= end) return;
  bytecode::InstructionList body = bytecode::clone(*fallback.original);
  const std::size_t start = body_start(body);
  if (start >= body.size()) throw InternalError("eager fallback: the original code has no body");

  builder.set_positions(first_line_positions(original));
  const std::size_t handler = builder.instructions().size();
  // [exception] -> []; the local is cleared after the call so the frame does not keep the
  // exception's traceback (which refers back to the frame) alive.
  builder.store_fast(kFailureLocal);
  builder.before_callable();
  builder.load_const(fallback.on_failure.get());
  builder.after_callable();
  builder.load_fast(kFailureLocal);
  builder.call(1);
  builder.pop_top();
  builder.load_const(Py_None);
  builder.store_fast(kFailureLocal);
  builder.emit(op::JUMP_FORWARD, 0).target = body[start].get();

  auto entry = std::make_shared<bytecode::ExceptionTableEntry>();
  entry->target = builder.instructions()[handler].get();
  entry->depth = 0;
  entry->lasti = false;
  entry->start = builder.instructions()[first].get();
  entry->end = builder.instructions()[end - 1].get();
  for (std::size_t i = first; i < end; ++i) {
    if (builder.instructions()[i]->exception_entry) throw InternalError("eager fallback: the graph call is already protected");
    builder.instructions()[i]->exception_entry = entry;
  }
  for (std::size_t i = start; i < body.size(); ++i) builder.instructions().push_back(std::move(body[i]));
}

}  // namespace bytegraph::codegen
