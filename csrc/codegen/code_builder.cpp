#include "codegen/code_builder.h"

#include "bytegraph/opcodes_generated.h"
#include "python/errors.h"

namespace bytegraph::codegen {

namespace op = bytecode::op;

py::Ref<> interned(const std::string& text) {
  return check(PyUnicode_InternFromString(text.c_str()));
}

bytecode::Instruction& CodeBuilder::emit(int opcode, int arg, py::Ref<> argval) {
  auto instruction = std::make_unique<bytecode::Instruction>();
  instruction->opcode = opcode;
  instruction->arg = arg;
  instruction->argval = std::move(argval);
  instruction->positions = positions_;
  instructions_.push_back(std::move(instruction));
  return *instructions_.back();
}

void CodeBuilder::load_const(PyObject* value) { emit(op::LOAD_CONST, -1, py::Ref<>::newref(value)); }
void CodeBuilder::load_fast(const std::string& name) { emit(op::LOAD_FAST, -1, interned(name)); }
void CodeBuilder::store_fast(const std::string& name) { emit(op::STORE_FAST, -1, interned(name)); }
void CodeBuilder::load_deref(const std::string& name) { emit(op::LOAD_DEREF, -1, interned(name)); }

// LOAD_GLOBAL's low argument bit asks the interpreter to push NULL first; the assembler
// keeps that bit when it recomputes the name index.
void CodeBuilder::load_global(const std::string& name, bool push_null) {
  emit(op::LOAD_GLOBAL, push_null ? 1 : 0, interned(name));
}

void CodeBuilder::load_attr(const std::string& name) { emit(op::LOAD_ATTR, -1, interned(name)); }

void CodeBuilder::store_attr(const std::string& name) { emit(op::STORE_ATTR, -1, interned(name)); }
void CodeBuilder::store_global(const std::string& name) { emit(op::STORE_GLOBAL, -1, interned(name)); }
void CodeBuilder::store_subscr() { emit(op::STORE_SUBSCR); }
void CodeBuilder::pop_top() { emit(op::POP_TOP); }

void CodeBuilder::subscript_const(PyObject* key) {
  load_const(key);
  emit(op::BINARY_SUBSCR);
}

void CodeBuilder::call(int nargs) {
  emit(op::PRECALL, nargs);
  emit(op::CALL, nargs);
}

void CodeBuilder::build(int opcode, int count) { emit(opcode, count); }
void CodeBuilder::return_value() { emit(op::RETURN_VALUE); }

}  // namespace bytegraph::codegen
