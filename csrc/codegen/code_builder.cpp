#include "codegen/code_builder.h"

#include "bytecode/opcodes.h"
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

void CodeBuilder::before_callable() {
  if (!bytecode::kCallNullAfterCallable) emit(op::PUSH_NULL);
}

void CodeBuilder::after_callable() {
  if (bytecode::kCallNullAfterCallable) emit(op::PUSH_NULL);
}

void CodeBuilder::call(int nargs) {
  static const int prepare = bytecode::family_opcode(bytecode::Family::kCallPrepare);
  if (prepare >= 0) emit(prepare, nargs);
  emit(op::CALL, nargs);
}

// Keyword names are an instruction of their own before the call (KW_NAMES), or a constant
// on the stack that CALL_KW pops.
void CodeBuilder::call_with_keywords(int nargs, PyObject* kw_names) {
  static const int kw_names_op = bytecode::family_opcode(bytecode::Family::kKwNames);
  static const int call_kw = bytecode::family_opcode(bytecode::Family::kCallKw);
  if (kw_names_op >= 0) {
    emit(kw_names_op, -1, py::Ref<>::newref(kw_names));
    call(nargs);
  } else if (call_kw >= 0) {
    load_const(kw_names);
    emit(call_kw, nargs);
  } else {
    throw InternalError("this interpreter has neither KW_NAMES nor CALL_KW");
  }
}

// MAKE_FUNCTION takes the flags as its argument, or (3.13+) makes a bare function that
// SET_FUNCTION_ATTRIBUTE completes one extra at a time, the topmost (highest flag) first.
void CodeBuilder::make_function(int flags) {
  if (bytecode::opcode_info(op::MAKE_FUNCTION).has_arg) {
    emit(op::MAKE_FUNCTION, flags);
    return;
  }
  static const int set_attribute = bytecode::family_opcode(bytecode::Family::kSetFunctionAttribute);
  emit(op::MAKE_FUNCTION);
  for (int flag = 0x08; flag > 0; flag >>= 1) {
    if (!(flags & flag)) continue;
    if (set_attribute < 0) throw InternalError("MAKE_FUNCTION without flags and no SET_FUNCTION_ATTRIBUTE");
    emit(set_attribute, flag);
  }
}

void CodeBuilder::load_cell(const std::string& name) { emit(bytecode::kLoadCellOpcode, -1, interned(name)); }

void CodeBuilder::build(int opcode, int count) { emit(opcode, count); }
void CodeBuilder::return_value() { emit(op::RETURN_VALUE); }

}  // namespace bytegraph::codegen
