// Stack shuffling, loads and stores of locals, globals, cells and attributes.
#include "bytecode/arguments.h"
#include "bytecode/decode.h"
#include "trace/interpreter.h"
#include "trace/values/exceptions.h"

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

// One half of a paired local instruction, as the single instruction it stands for.
Instruction paired_half(const Instruction& inst, int local) {
  Instruction half;
  half.opcode = inst.opcode;
  half.arg = local;
  half.offset = inst.offset;
  half.positions = inst.positions;
  return half;
}

void load_fast(Tracer&, FrameState& frame, const Instruction& inst) {
  ValuePtr& value = local_slot(frame, inst.arg);
  if (!value)
    unsupported("unbound_local", "local variable '" + frame.code->localsplus_names[inst.arg] + "' read before assignment");
  frame.push(value);
}

void store_fast(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr value = frame.pop();
  tracer.name_after_local(value, frame.code->localsplus_names[inst.arg]);
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

// LOAD_GLOBAL's and LOAD_ATTR's flag bit asks for the call protocol's NULL with the value:
// below it before 3.13, above it since (the generated tables say which).
void push_with_null(FrameState& frame, ValuePtr value, bool with_null) {
  if (with_null && !bytecode::kCallNullAfterCallable) frame.push(NullValue::get());
  frame.push(std::move(value));
  if (with_null && bytecode::kCallNullAfterCallable) frame.push(NullValue::get());
}

void load_global(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  std::string name = name_of(inst);
  if (const SideEffects::GlobalWrite* written = tracer.side_effects.global_written(frame.globals.get(), name)) {
    if (!written->value) unsupported("name_error", "name '" + name + "' is not defined (deleted in the trace)");
    push_with_null(frame, written->value, bytecode::load_global_pushes_null(inst));
    return;
  }
  const bool with_null = bytecode::load_global_pushes_null(inst);
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
  push_with_null(frame, tracer.wrap(real, source), with_null);
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
  if (!cell.mutable_here) {
    // A cell of a closure made outside the trace (`nonlocal`): written back after the graph.
    if (cell.root_name.empty() && !cell.cell_source)
      unsupported("side_effect", "assigning to the closure variable '" + frame.code->localsplus_names[inst.arg] +
                                     "' of a function the trace has no name for");
    tracer.side_effects.mark_mutated(local_slot(frame, inst.arg));
  }
  tracer.journal.save(local_slot(frame, inst.arg));
  cell.contents = frame.pop();
  if (cell.mutable_here) tracer.name_after_local(cell.contents, frame.code->localsplus_names[inst.arg]);
}

// 3.12+: LOAD_ATTR's flag bit is the method form; the attribute is pushed bound, with the
// NULL of a plain call (the tracer never splits a method into function and self).
void load_attr(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr object = frame.pop();
  push_with_null(frame, object->get_attr(tracer, name_of(inst)), bytecode::argument_flags(inst.opcode, inst.arg) != 0);
}

// 3.12+: super().name in one instruction, [super, class, self] -> the attribute (flag bit 0:
// the method form, with the call protocol's NULL). The same as calling super(class, self)
// and loading the attribute from the result.
void load_super_attr(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr self = frame.pop();
  ValuePtr cls = frame.pop();
  ValuePtr super_function = frame.pop();
  ValuePtr bound = super_function->call(tracer, {cls, self}, {});
  push_with_null(frame, bound->get_attr(tracer, name_of(inst)), (bytecode::argument_flags(inst.opcode, inst.arg) & 1) != 0);
}

void load_method(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr object = frame.pop();
  ValuePtr attribute = object->get_attr(tracer, name_of(inst));
  frame.push(NullValue::get());
  frame.push(std::move(attribute));
}

// [value, owner] -> []: the owner's kind records the change (or breaks).
void store_attr(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr object = frame.pop();
  ValuePtr value = frame.pop();
  object->set_attr(tracer, name_of(inst), value);
}

// A global's new value: seen by later reads in the trace, written back after the graph.
void store_global(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  if (!frame.root_globals && !frame.globals_source) unsupported("side_effect", "assigning the global '" + name_of(inst) + "'");
  tracer.side_effects.write_global(frame.globals.get(), name_of(inst), frame.pop());
}

// `del name` of a global: a NameError where the name is not there (absent from the dict, or
// deleted earlier in the trace), which is guarded either way.
void delete_global(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  const std::string name = name_of(inst);
  if (!frame.root_globals && !frame.globals_source) unsupported("side_effect", "deleting the global '" + name + "'");
  const std::string missing = "name '" + name + "' is not defined";
  if (const SideEffects::GlobalWrite* written = tracer.side_effects.global_written(frame.globals.get(), name)) {
    if (!written->value) raise_error("name_error", PyExc_NameError, missing);
  } else {
    PyObject* real = PyDict_GetItemWithError(frame.globals.get(), inst.argval.get());  // borrowed
    if (real == nullptr && PyErr_Occurred()) throw_python_error();
    if (real == nullptr) {
      tracer.guards.add(GuardLog::Kind::LacksKey, frame.root_globals ? guards::globals_dict_source() : frame.globals_source,
                        inst.argval.get());
      raise_error("name_error", PyExc_NameError, missing);
    }
    // Any guard on the global also says it is there.
    tracer.guards.add(GuardLog::Kind::Type,
                      frame.root_globals ? guards::global_source(name) : guards::item_source(frame.globals_source, inst.argval.copy()),
                      (PyObject*)Py_TYPE(real));
  }
  tracer.side_effects.write_global(frame.globals.get(), name, nullptr);
}

void delete_attr(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  ValuePtr object = frame.pop();
  object->del_attr(tracer, name_of(inst));
}

// 3.13's paired instructions: two locals in one argument (first arg >> 4, then arg & 15).
void load_fast_load_fast(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  Instruction first = paired_half(inst, inst.arg >> 4), second = paired_half(inst, inst.arg & 15);
  load_fast(tracer, frame, first);
  load_fast(tracer, frame, second);
}

void store_fast_store_fast(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  Instruction first = paired_half(inst, inst.arg >> 4), second = paired_half(inst, inst.arg & 15);
  store_fast(tracer, frame, first);
  store_fast(tracer, frame, second);
}

void store_fast_load_fast(Tracer& tracer, FrameState& frame, const Instruction& inst) {
  Instruction first = paired_half(inst, inst.arg >> 4), second = paired_half(inst, inst.arg & 15);
  store_fast(tracer, frame, first);
  load_fast(tracer, frame, second);
}

void kw_names(Tracer&, FrameState& frame, const Instruction& inst) { frame.kw_names = inst.argval.copy(); }

}  // namespace

void register_stack_handlers(HandlerTable& table) {
  table.add(op::NOP, nop);
  table.add(op::RESUME, nop);
  table.add(Family::kCallPrepare, nop);
  table.add(op::CACHE, nop);
  table.add(op::POP_TOP, pop_top);
  table.add(op::COPY, copy);
  table.add(op::SWAP, swap);
  table.add(op::PUSH_NULL, push_null);
  table.add(op::LOAD_CONST, load_const);
  table.add(op::LOAD_FAST, load_fast);
  table.add(Family::kLoadFastChecked, load_fast);
  table.add(op::STORE_FAST, store_fast);
  table.add(Family::kLoadFastAndClear, load_fast_and_clear);
  table.add(op::DELETE_FAST, delete_fast);
  table.add(op::LOAD_GLOBAL, load_global);
  table.add(op::MAKE_CELL, make_cell);
  table.add(op::COPY_FREE_VARS, copy_free_vars);
  table.add(Family::kLoadClosure, load_closure);
  table.add(op::LOAD_DEREF, load_deref);
  table.add(op::STORE_DEREF, store_deref);
  table.add(op::LOAD_ATTR, load_attr);
  table.add(Family::kMethodLoad, load_method);
  table.add(op::STORE_ATTR, store_attr);
  table.add(op::STORE_GLOBAL, store_global);
  table.add(op::DELETE_GLOBAL, delete_global);
  table.add(op::DELETE_ATTR, delete_attr);
  table.add(Family::kKwNames, kw_names);
  table.add(Family::kLoadSuperAttr, load_super_attr);
  table.add(Family::kLoadFastLoadFast, load_fast_load_fast);
  table.add(Family::kStoreFastStoreFast, store_fast_store_fast);
  table.add(Family::kStoreFastLoadFast, store_fast_load_fast);
}

}  // namespace bytegraph::trace
