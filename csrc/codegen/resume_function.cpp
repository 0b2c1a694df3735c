#include "codegen/resume_function.h"

#include <algorithm>

#include "bytecode/assemble.h"
#include "bytecode/decode.h"
#include "bytecode/opcodes.h"
#include "bytecode/stack_depth.h"
#include "codegen/code_builder.h"
#include "codegen/output_plan.h"
#include "python/errors.h"

namespace bytegraph::codegen {

namespace op = bytecode::op;

namespace {

constexpr int kVarargsFlag = 0x04;
constexpr int kVarkeywordsFlag = 0x08;

// The leading MAKE_CELL / COPY_FREE_VARS / NOP / RESUME instructions: the prologue runs its
// own copy, and nothing jumps back into them.
std::size_t prefix_length(const bytecode::InstructionList& instructions) {
  std::size_t i = 0;
  while (i < instructions.size()) {
    int opcode = instructions[i]->opcode;
    if (opcode != op::MAKE_CELL && opcode != op::COPY_FREE_VARS && opcode != op::NOP && opcode != op::RESUME) break;
    ++i;
    if (opcode == op::RESUME) break;
  }
  return i;
}

std::vector<std::string> names_of(PyObject* tuple /* borrowed */) {
  std::vector<std::string> names;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i) names.push_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(tuple, i)));
  return names;
}

py::Ref<> tuple_of_names(const std::vector<std::string>& names) {
  py::Ref<> tuple = check(PyTuple_New(static_cast<Py_ssize_t>(names.size())));
  for (std::size_t i = 0; i < names.size(); ++i) PyTuple_SET_ITEM(tuple.get(), i, interned(names[i]).release());
  return tuple;
}

// Arguments first (live locals, then stack values), then the original's other locals. Locals
// come first so that the original's first argument can stay in slot 0, where zero-argument
// super() looks for the instance.
std::vector<std::string> resume_varnames(PyCodeObject* original, const ResumeSpec& spec,
                                         const std::vector<std::string>& cell_names, int& argcount) {
  std::vector<std::string> names(spec.locals.begin(), spec.locals.end());
  for (std::size_t i = 0; i < spec.stack.size(); ++i)
    if (spec.stack[i] != StackSlot::Null && spec.stack[i] != StackSlot::Context) names.push_back(stack_argument_name(i));
  argcount = static_cast<int>(names.size());
  py::Ref<> varnames = check(PyCode_GetVarnames(original));
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(varnames.get()); ++i) {
    std::string name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(varnames.get(), i));
    if (std::find(cell_names.begin(), cell_names.end(), name) != cell_names.end()) continue;  // now free
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

// The original's cell variables are free variables of a resume function (the cells are
// shared with closures made before the break). Reading an empty one then raises NameError
// ("free variable"), where the original raises UnboundLocalError: each such LOAD_DEREF gets
// an exception-table entry of its own whose handler raises what the original would. The
// handler runs only on that error; it is covered by whatever covered the read.
struct CellRead {
  bytecode::Instruction* read;
  int depth;  // the stack depth before it, in the original
};

std::vector<CellRead> cell_reads(const bytecode::InstructionList& instructions, const std::vector<std::string>& cells) {
  std::vector<int> depths = bytecode::instruction_depths(instructions);
  std::vector<CellRead> reads;
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    bytecode::Instruction& inst = *instructions[i];
    if (inst.opcode != op::LOAD_DEREF || !inst.argval || depths[i] < 0) continue;
    if (std::find(cells.begin(), cells.end(), PyUnicode_AsUTF8(inst.argval.get())) != cells.end())
      reads.push_back({&inst, depths[i]});
  }
  return reads;
}

void raise_unbound_local_errors(CodeBuilder& builder, const std::vector<CellRead>& reads) {
  for (const CellRead& cell : reads) {
    const std::string message = "cannot access local variable '" + std::string(PyUnicode_AsUTF8(cell.read->argval.get())) +
                                "' where it is not associated with a value";
    CodeBuilder handler;
    handler.set_positions(cell.read->positions);
    handler.pop_top();  // the NameError
    handler.before_callable();
    handler.load_const(PyExc_UnboundLocalError);
    handler.after_callable();
    handler.load_const(interned(message).get());
    handler.call(1);
    handler.emit(op::RAISE_VARARGS, 1);
    bytecode::InstructionList code = handler.take();
    auto entry = std::make_shared<bytecode::ExceptionTableEntry>();
    entry->start = entry->end = cell.read;
    entry->target = code.front().get();
    entry->depth = cell.depth;
    for (auto& inst : code) {
      inst->exception_entry = cell.read->exception_entry;
      builder.instructions().push_back(std::move(inst));
    }
    cell.read->exception_entry = entry;
  }
}

}  // namespace

std::string stack_argument_name(std::size_t position) { return kStackArgumentPrefix + std::to_string(position); }

ResumeCode make_resume_code(PyCodeObject* original, const ResumeSpec& spec) {
  py::Ref<> cellvars = check(PyCode_GetCellvars(original));
  py::Ref<> freevars = check(PyCode_GetFreevars(original));
  std::vector<std::string> cell_names = names_of(cellvars.get());
  std::vector<std::string> free_names = names_of(freevars.get());
  free_names.insert(free_names.end(), cell_names.begin(), cell_names.end());
  bytecode::DecodedCode decoded = bytecode::decode(original);
  auto& instructions = decoded.instructions;
  const std::vector<CellRead> reads = cell_reads(instructions, cell_names);
  const std::size_t skipped = prefix_length(instructions);
  bytecode::Instruction* target = nullptr;
  for (std::size_t i = skipped; i < instructions.size(); ++i)
    if (instructions[i]->offset == spec.offset) target = instructions[i].get();
  if (target == nullptr)
    throw PythonError::make(PyExc_ValueError, "no instruction to resume at offset " + std::to_string(spec.offset));

  CodeBuilder builder;
  builder.set_positions(target->positions);
  if (!free_names.empty()) builder.emit(op::COPY_FREE_VARS, static_cast<int>(free_names.size()));
  builder.emit(op::RESUME, 0);
  for (std::size_t i = 0; i < spec.stack.size(); ++i) {
    if (spec.stack[i] == StackSlot::Null) {
      builder.emit(op::PUSH_NULL);
      continue;
    }
    if (spec.stack[i] == StackSlot::Context) {
      emit_enter_context(builder, spec.contexts.at(i).get());
      continue;
    }
    if (spec.stack[i] == StackSlot::ListIterator) {
      builder.before_callable();
      builder.load_const(spec.contexts.at(i).get());
      builder.after_callable();
      builder.load_fast(stack_argument_name(i));
      builder.call(1);
      continue;
    }
    builder.load_fast(stack_argument_name(i));
    if (spec.stack[i] == StackSlot::Iterator) builder.emit(op::GET_ITER);
  }
  builder.emit(op::JUMP_FORWARD, 0).target = target;
  const std::size_t prologue = builder.instructions().size();
  std::vector<int> kept_offsets;
  for (std::size_t i = skipped; i < instructions.size(); ++i) {
    kept_offsets.push_back(instructions[i]->offset);
    builder.instructions().push_back(std::move(instructions[i]));
  }
  raise_unbound_local_errors(builder, reads);  // after the kept instructions: their offsets map 1:1

  bytecode::CodeOverrides overrides;
  int argcount = 0;
  overrides.varnames = tuple_of_names(resume_varnames(original, spec, cell_names, argcount));
  overrides.cellvars = tuple_of_names({});
  overrides.freevars = tuple_of_names(free_names);
  overrides.argcount = argcount;
  overrides.posonlyargcount = 0;
  overrides.kwonlyargcount = 0;
  overrides.flags = original->co_flags & ~(kVarargsFlag | kVarkeywordsFlag);
  overrides.name = interned(spec.name);
  overrides.qualname = interned(spec.qualname.empty() ? spec.name : spec.qualname);
  bytecode::InstructionList list = builder.take();
  ResumeCode result;
  result.code = bytecode::assemble(list, original, overrides);

  bytecode::DecodedCode assembled = bytecode::decode(reinterpret_cast<PyCodeObject*>(result.code.get()));
  for (std::size_t j = 0; j < kept_offsets.size() && prologue + j < assembled.instructions.size(); ++j)
    result.original_offsets.emplace_back(assembled.instructions[prologue + j]->offset, kept_offsets[j]);
  return result;
}

}  // namespace bytegraph::codegen
