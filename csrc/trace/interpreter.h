// The opcode dispatch table: one small handler per opcode (or per family of opcodes),
// registered by name and resolved against the generated opcode tables, so an opcode this
// interpreter version lacks is simply absent. An opcode without a handler is a graph break.
#pragma once

#include <array>

#include "trace/tracer.h"

namespace bytegraph::trace {

using Handler = void (*)(Tracer& tracer, FrameState& frame, const bytecode::Instruction& inst);

class HandlerTable {
 public:
  // Registers `handler` for the opcode called `name`, if this Python version has it.
  void add(const char* name, Handler handler);
  Handler operator[](int opcode) const { return table_[opcode & 0xFF]; }

 private:
  std::array<Handler, 256> table_{};
};

const HandlerTable& handlers();
const char* opcode_name(int opcode);

// One registration function per handler family (handlers_*.cpp).
void register_stack_handlers(HandlerTable& table);
void register_operator_handlers(HandlerTable& table);
void register_container_handlers(HandlerTable& table);
void register_control_handlers(HandlerTable& table);
void register_call_handlers(HandlerTable& table);
void register_import_handlers(HandlerTable& table);

}  // namespace bytegraph::trace
