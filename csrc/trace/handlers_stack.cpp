// Stack shuffling, loads and stores of locals, globals, cells and attributes.
#include "bytecode/decode.h"
#include "trace/interpreter.h"

namespace bytegraph::trace {

namespace {

using bytecode::Instruction;

std::string name_of(const Instruction& inst) {
  if (!inst.argval || !PyUnicode_Check(inst.argval.get())) throw InternalError("instruction without a name argument");
  return PyUnicode_AsUTF8(inst.argval.get());
}

void nop(Tracer&, FrameState&, const Instruction&) {}

void pop_top(Tracer&, FrameState& frame, const Instruction&) { frame.pop(); }

void copy(Tracer&, FrameState& frame, const Instruction& inst) { frame.push(frame.top(inst.arg - 1)); }

void swap(Tracer&, FrameState& frame, const Instruction& inst) { std::swap(frame.top(0), frame.top(inst.arg - 1)); }

void push_null(Tracer&, FrameState& frame, const Instruction&) { frame.push(NullValue::get()); }

void load_const(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  PyObject* constant = inst.argval.get();
  // Code objects and frozensets are constants too; tuples of constants stay one constant.
  frame.push(classify(constant) == ObjectKind::Constant || PyTuple_Check(constant) || PyFrozenSet_Check(constant)
                 ? ConstantValue::make(inst.argval.copy())
                 : tracer.wrap(constant, nullptr));
}

ValuePtr& local_slot(FrameState& frame, int index) {
  if (index < 0 || static_cast<size_t>(index) >= frame.locals.size()) throw InternalError("local index out of range");
  return frame.locals[index];
}

void load_fast(Tracer&, FrameState& frame, const Instruction& inst) {
  ValuePtr& value = local_slot(frame, inst.arg);
  if (!value)
    unsupported("unbound_local", "local variable '" + frame.code->localsplus_names[inst.arg] + "' read before assignment");
  frame.push(value);
}

void store_fast(Tracer&, FrameState& frame, const Instruction& inst) {
  ValuePtr value = frame.pop();
  // 3.12 comprehensions restore an unbound local with the NULL LOAD_FAST_AND_CLEAR pushed.
  local_slot(frame, inst.arg) = value->is_null() ? nullptr : std::move(value);
}

// 3.12 (PEP 709): saves a local around an inlined comprehension, NULL when unbound.
void load_fast_and_clear(Tracer&, FrameState& frame, const Instruction& inst) {
  ValuePtr& slot = local_slot(frame, inst.arg);
  frame.push(slot ? std::move(slot) : NullValue::get());
  slot = nullptr;
}

void delete_fast(Tracer&, FrameState& frame, const Instruction& inst) { local_slot(frame, inst.arg) = nullptr; }

void load_global(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  std::string name = name_of(inst);
  if (bytecode::load_global_pushes_null(inst)) frame.push(NullValue::get());
  PyObject* real = PyDict_GetItemWithError(frame.globals.get(), inst.argval.get());  // borrowed
  if (real == nullptr && PyErr_Occurred()) throw_python_error();
  guards::SourcePtr source;
  if (real != nullptr) {
    if (frame.root_globals) source = guards::global_source(name);
    else if (frame.globals_source) source = guards::item_source(frame.globals_source, inst.argval.copy());
  } else {
    PyObject* builtins = frame.builtins.get();
    if (PyDict_Check(builtins)) {
      real = PyDict_GetItemWithError(builtins, inst.argval.get());
    } else {
      real = PyObject_GetAttr(builtins, inst.argval.get());
      if (real) Py_DECREF(real);  // modules keep their attributes alive
      else PyErr_Clear();
    }
    if (real == nullptr) {
      if (PyErr_Occurred()) throw_python_error();
      unsupported("name_error", "name '" + name + "' is not defined");
    }
    if (frame.root_builtins) source = guards::builtin_source(name);
    else if (frame.builtins_source) source = guards::item_source(frame.builtins_source, inst.argval.copy());
    // A builtin is what the name means only while no global of that name shadows it.
    guards::SourcePtr globals = frame.root_globals ? guards::globals_dict_source() : frame.globals_source;
    if (globals) tracer.guards.add(GuardLog::Kind::LacksKey, globals, inst.argval.get());
  }
  frame.push(tracer.wrap(real, source));
}

CellValue& cell_at(FrameState& frame, int index) {
  auto* cell = dynamic_cast<CellValue*>(local_slot(frame, index).get());
  if (cell == nullptr) throw InternalError("cell slot without a cell");
  return *cell;
}

void make_cell(Tracer&, FrameState& frame, const Instruction& inst) {
  ValuePtr& slot = local_slot(frame, inst.arg);
  slot = std::make_shared<CellValue>(slot, true);
}

void copy_free_vars(Tracer&, FrameState& frame, const Instruction& inst) {
  size_t n = static_cast<size_t>(inst.arg);
  if (frame.closure.size() != n) throw InternalError("closure size differs from COPY_FREE_VARS");
  size_t first = frame.locals.size() - n;
  for (size_t i = 0; i < n; ++i) frame.locals[first + i] = frame.closure[i];
}

void load_closure(Tracer&, FrameState& frame, const Instruction& inst) { frame.push(local_slot(frame, inst.arg)); }

void load_deref(Tracer&, FrameState& frame, const Instruction& inst) {
  CellValue& cell = cell_at(frame, inst.arg);
  if (!cell.contents)
    unsupported("unbound_local", "free variable '" + frame.code->localsplus_names[inst.arg] + "' read before assignment");
  frame.push(cell.contents);
}

void store_deref(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  CellValue& cell = cell_at(frame, inst.arg);
  if (!cell.mutable_here)
    unsupported("side_effect", "assigning to the closure variable '" + frame.code->localsplus_names[inst.arg] + "'");
  tracer.journal.save(local_slot(frame, inst.arg));
  cell.contents = frame.pop();
}

void load_attr(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr object = frame.pop();
#if PY_VERSION_HEX >= 0x030C0000
  if (inst.arg & 1) frame.push(NullValue::get());  // 3.12 method form: [NULL, attr]
#endif
  frame.push(object->get_attr(tracer, name_of(inst)));
}

void load_method(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr object = frame.pop();
  ValuePtr attribute = object->get_attr(tracer, name_of(inst));
  frame.push(NullValue::get());
  frame.push(std::move(attribute));
}

void store_attr(Tracer&, FrameState& frame, const Instruction& inst) {
  ValuePtr object = frame.top(0);
  unsupported("side_effect", "setting attribute '" + name_of(inst) + "' of " + object->repr());
}

// Writes that outlive the trace: replaying them after the graph is not implemented yet.
void store_global(Tracer&, FrameState&, const Instruction& inst) {
  unsupported("side_effect", "assigning the global '" + name_of(inst) + "'");
}

void delete_attr(Tracer&, FrameState& frame, const Instruction& inst) {
  unsupported("side_effect", "deleting attribute '" + name_of(inst) + "' of " + frame.top()->repr());
}

void kw_names(Tracer&, FrameState& frame, const Instruction& inst) { frame.kw_names = inst.argval.copy(); }

}  // namespace

void register_stack_handlers(HandlerTable& table) {
  table.add("NOP", nop);
  table.add("RESUME", nop);
  table.add("PRECALL", nop);
  table.add("CACHE", nop);
  table.add("POP_TOP", pop_top);
  table.add("COPY", copy);
  table.add("SWAP", swap);
  table.add("PUSH_NULL", push_null);
  table.add("LOAD_CONST", load_const);
  table.add("LOAD_FAST", load_fast);
  table.add("LOAD_FAST_CHECK", load_fast);
  table.add("STORE_FAST", store_fast);
  table.add("LOAD_FAST_AND_CLEAR", load_fast_and_clear);
  table.add("DELETE_FAST", delete_fast);
  table.add("LOAD_GLOBAL", load_global);
  table.add("MAKE_CELL", make_cell);
  table.add("COPY_FREE_VARS", copy_free_vars);
  table.add("LOAD_CLOSURE", load_closure);
  table.add("LOAD_DEREF", load_deref);
  table.add("STORE_DEREF", store_deref);
  table.add("LOAD_ATTR", load_attr);
  table.add("LOAD_METHOD", load_method);
  table.add("STORE_ATTR", store_attr);
  table.add("STORE_GLOBAL", store_global);
  table.add("DELETE_GLOBAL", store_global);
  table.add("DELETE_ATTR", delete_attr);
  table.add("KW_NAMES", kw_names);
}

}  // namespace bytegraph::trace
