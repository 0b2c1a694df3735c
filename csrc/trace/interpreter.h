// The opcode dispatch table: one small handler per opcode (or per family of opcodes). A
// handler registers for an opcode by its generated constant (`op::NAME`, which exists only
// where this interpreter has the opcode, so registering an absent one does not build) or for
// a family (bytecode::Family: instructions that mean the same across versions, or exist on
// some versions only; a family may be empty here). An opcode without a handler is a graph
// break.
#pragma once

#include <array>

#include "bytecode/opcodes.h"
#include "trace/tracer.h"

namespace bytegraph::trace {

namespace op = bytecode::op;
using bytecode::Family;

using Handler = void (*)(Tracer& tracer, FrameState& frame, const bytecode::Instruction& inst);

class HandlerTable {
 public:
  void add(int opcode, Handler handler);
  // Every opcode of `family` on this interpreter (none where the family is empty here).
  void add(bytecode::Family family, Handler handler);
  Handler operator[](int opcode) const { return table_[opcode & 0xFF]; }

 private:
  std::array<Handler, 256> table_{};
};

const HandlerTable& handlers();
const char* opcode_name(int opcode);

// Whether each handler's push/pop is checked against the opcode's stack effect (a mismatch is
// an InternalError): BYTEGRAPH_CHECK_STACK_EFFECTS set, or _C.trace.check_stack_effects(True).
bool& stack_effect_checks();

// One registration function per handler family (handlers_*.cpp).
void register_stack_handlers(HandlerTable& table);
void register_operator_handlers(HandlerTable& table);
void register_container_handlers(HandlerTable& table);
void register_match_handlers(HandlerTable& table);
void register_control_handlers(HandlerTable& table);
void register_call_handlers(HandlerTable& table);
void register_import_handlers(HandlerTable& table);
void register_exception_handlers(HandlerTable& table);

}  // namespace bytegraph::trace
