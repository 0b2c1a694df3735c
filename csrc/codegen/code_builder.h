// Emits instruction sequences for generated code, by opcode family rather than by raw
// opcode, so call sites read like the bytecode they produce. The version's call protocol
// (where the NULL goes, PRECALL, keyword names), how MAKE_FUNCTION gets its extras and how
// a cell is loaded come from the generated tables, never from version checks here.
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
  // A call is emitted as: before_callable(); <load the callable>; after_callable();
  // <load the arguments>; call(nargs). The call protocol's NULL goes below the callable
  // (3.11, 3.12) or above it (3.13+); the other of the two emits nothing.
  void before_callable();
  void after_callable();
  // [callable and NULL, args...] -> result
  void call(int nargs);
  // The same with the last len(kw_names) arguments passed by keyword.
  void call_with_keywords(int nargs, PyObject* kw_names /* borrowed tuple of str */);
  // [extras by MAKE_FUNCTION's flags (defaults, kwdefaults, annotations, closure), code]
  // -> function.
  void make_function(int flags);
  // Pushes the cell object of cell or free variable `name` (for a closure tuple).
  void load_cell(const std::string& name);
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
