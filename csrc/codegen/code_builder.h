// Emits instruction sequences for generated code, by opcode family rather than by raw
// opcode, so call sites read like the bytecode they produce (3.11 call protocol included).
#pragma once

#include <string>

#include "bytecode/instruction.h"
#include "python/ref.h"

namespace bytegraph::codegen {

class CodeBuilder {
 public:
  bytecode::Instruction& emit(int opcode, int arg = -1, py::Ref<> argval = {});

  void load_const(PyObject* value /* borrowed */);
  void load_fast(const std::string& name);
  void store_fast(const std::string& name);
  void load_deref(const std::string& name);
  void load_global(const std::string& name, bool push_null);
  void load_attr(const std::string& name);
  void store_attr(const std::string& name);    // [value, owner] -> []
  void store_global(const std::string& name);  // [value] -> []
  void store_subscr();                         // [value, container, key] -> []
  void pop_top();
  void subscript_const(PyObject* key /* borrowed */);
  // [NULL, callable, args...] -> result
  void call(int nargs);
  void build(int opcode, int count);
  void return_value();

  // Every emitted instruction gets these positions (generated code has no source of its own).
  void set_positions(const bytecode::Positions& positions) { positions_ = positions; }
  bytecode::InstructionList take() { return std::move(instructions_); }
  bytecode::InstructionList& instructions() { return instructions_; }

 private:
  bytecode::InstructionList instructions_;
  bytecode::Positions positions_;
};

py::Ref<> interned(const std::string& text);

}  // namespace bytegraph::codegen
