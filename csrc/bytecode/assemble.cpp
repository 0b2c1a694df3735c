#include "bytecode/assemble.h"

#include <string>
#include <vector>

#include "bytecode/code_tables.h"
#include "bytecode/exception_table.h"
#include "bytecode/instruction_index.h"
#include "bytecode/layout.h"
#include "bytecode/location_table.h"
#include "bytecode/opcodes.h"
#include "bytecode/stack_depth.h"
#include "python/errors.h"

namespace bytegraph::bytecode {

namespace {

py::Ref<> field_or(const py::Ref<>& override_value, PyObject* fallback /* new ref */) {
  if (override_value) {
    if (fallback) Py_DECREF(fallback);
    return override_value.copy();
  }
  return check(fallback);
}

py::Ref<> tuple_field(const py::Ref<>& override_value, PyObject* fallback /* new ref */, const char* field) {
  py::Ref<> value = field_or(override_value, fallback);
  if (!PyTuple_Check(value.get())) {
    throw PythonError::make(PyExc_TypeError, std::string(field) + " must be a tuple");
  }
  return value;
}

std::string encode_code(const InstructionList& instructions, const Layout& layout) {
  std::string code(static_cast<std::size_t>(layout.total_units) * 2, '\0');
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    const Instruction& instruction = *instructions[i];
    unsigned arg = instruction.arg > 0 ? static_cast<unsigned>(instruction.arg) : 0u;
    std::size_t at = static_cast<std::size_t>(layout.start[i]) * 2;
    for (int shift = 8 * layout.prefixes[i]; shift > 0; shift -= 8) {
      code[at++] = static_cast<char>(op::EXTENDED_ARG);
      code[at++] = static_cast<char>((arg >> shift) & 0xFF);
    }
    code[at++] = static_cast<char>(instruction.opcode);
    code[at++] = static_cast<char>(arg & 0xFF);
    // CACHE units stay zero: the string was zero-filled.
  }
  return code;
}

bool same_handler(const ExceptionTableEntry* a, const ExceptionTableEntry* b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return a->target == b->target && a->depth == b->depth && a->lasti == b->lasti;
}

std::string encode_exceptions(const InstructionList& instructions, const Layout& layout,
                              const InstructionIndex& index) {
  std::vector<RawExceptionEntry> entries;
  const ExceptionTableEntry* open = nullptr;
  for (std::size_t i = 0; i <= instructions.size(); ++i) {
    const ExceptionTableEntry* current = i < instructions.size() ? instructions[i]->exception_entry.get() : nullptr;
    int unit = i < instructions.size() ? layout.start[i] : layout.total_units;
    if (same_handler(open, current)) continue;
    if (open) entries.back().end = unit;
    if (current) {
      int handler = index.of(current->target, "an exception handler");
      entries.push_back({unit, unit, layout.start[handler], current->depth, current->lasti});
    }
    open = current;
  }
  return encode_exception_table(entries);
}

bool same_positions(const Positions& a, const Positions& b) {
  return a.lineno == b.lineno && a.end_lineno == b.end_lineno && a.col_offset == b.col_offset &&
         a.end_col_offset == b.end_col_offset;
}

// One run per instruction, or (where the interpreter's compiler does so) one per stretch of
// consecutive instructions with equal positions.
std::string encode_locations(const InstructionList& instructions, const Layout& layout, int first_lineno) {
  std::vector<LocationRun> runs;
  runs.reserve(instructions.size());
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    const int units = layout.units(instructions, i);
    if (kLocationEntriesSpanInstructions && !runs.empty() && same_positions(runs.back().positions, instructions[i]->positions)) {
      runs.back().units += units;
    } else {
      runs.push_back({units, instructions[i]->positions});
    }
  }
  return encode_location_table(runs, first_lineno);
}

py::Ref<> bytes_of(const std::string& data) {
  return check(PyBytes_FromStringAndSize(data.data(), static_cast<Py_ssize_t>(data.size())));
}

}  // namespace

py::Ref<> assemble(InstructionList& instructions, PyCodeObject* like, const CodeOverrides& overrides) {
  if (like == nullptr || !PyCode_Check(reinterpret_cast<PyObject*>(like))) {
    throw PythonError::make(PyExc_TypeError, "assemble() needs a code object as `like`");
  }
  CodeTables tables(tuple_field(overrides.consts, Py_NewRef(like->co_consts), "co_consts"),
                    tuple_field(overrides.names, Py_NewRef(like->co_names), "co_names"),
                    tuple_field(overrides.varnames, PyCode_GetVarnames(like), "co_varnames"),
                    tuple_field(overrides.cellvars, PyCode_GetCellvars(like), "co_cellvars"),
                    tuple_field(overrides.freevars, PyCode_GetFreevars(like), "co_freevars"));
  tables.resolve_arguments(instructions);
  InstructionIndex index(instructions);
  Layout layout = lay_out(instructions, index);
  int first_lineno = overrides.firstlineno.value_or(like->co_firstlineno);
  int stacksize = overrides.stacksize ? *overrides.stacksize : compute_stack_depth(instructions, index);

  py::Ref<> code = bytes_of(encode_code(instructions, layout));
  py::Ref<> linetable = bytes_of(encode_locations(instructions, layout, first_lineno));
  py::Ref<> exceptiontable = bytes_of(encode_exceptions(instructions, layout, index));
  py::Ref<> consts = tables.consts_tuple(), names = tables.names_tuple(), varnames = tables.varnames_tuple();
  py::Ref<> filename = field_or(overrides.filename, Py_NewRef(like->co_filename));
  py::Ref<> name = field_or(overrides.name, Py_NewRef(like->co_name));
  py::Ref<> qualname = field_or(overrides.qualname, Py_NewRef(like->co_qualname));

  // PyCode_NewWithPosOnlyArgs: the same call on 3.11 to 3.13 (an alias of the PyUnstable_
  // name since 3.12).
  PyCodeObject* result = PyCode_NewWithPosOnlyArgs(
      overrides.argcount.value_or(like->co_argcount), overrides.posonlyargcount.value_or(like->co_posonlyargcount),
      overrides.kwonlyargcount.value_or(like->co_kwonlyargcount), static_cast<int>(PyTuple_GET_SIZE(varnames.get())),
      stacksize, overrides.flags.value_or(like->co_flags), code.get(), consts.get(), names.get(), varnames.get(),
      tables.freevars().get(), tables.cellvars().get(), filename.get(), name.get(), qualname.get(), first_lineno,
      linetable.get(), exceptiontable.get());
  return check(reinterpret_cast<PyObject*>(result));
}

}  // namespace bytegraph::bytecode
