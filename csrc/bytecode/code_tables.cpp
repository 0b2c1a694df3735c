#include "bytecode/code_tables.h"

#include "bytecode/arguments.h"
#include "bytecode/opcodes.h"
#include "python/errors.h"

namespace bytegraph::bytecode {

namespace {

std::string opname(const Instruction& instruction) { return opcode_info(instruction.opcode).name; }

bool same_name(PyObject* a, PyObject* b) {
  if (a == b) return true;
  return PyUnicode_Check(a) && PyUnicode_Check(b) && PyUnicode_Compare(a, b) == 0;
}

}  // namespace

CodeTables::Table::Table(py::Ref<> tuple) : original(std::move(tuple)) {
  if (!original) return;
  Py_ssize_t size = PyTuple_GET_SIZE(original.get());
  items.reserve(static_cast<std::size_t>(size));
  for (Py_ssize_t i = 0; i < size; ++i) items.push_back(PyTuple_GET_ITEM(original.get(), i));
}

int CodeTables::Table::find_identical(PyObject* value) {
  if (!indexed) {
    // First occurrence wins, as a linear scan would find it.
    for (int i = static_cast<int>(items.size()) - 1; i >= 0; --i) by_identity[items[i]] = i;
    indexed = true;
  }
  auto it = by_identity.find(value);
  return it == by_identity.end() ? -1 : it->second;
}

int CodeTables::Table::find_equal_name(PyObject* name) {
  int found = find_identical(name);
  if (found >= 0) return found;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (same_name(items[i], name)) return static_cast<int>(i);
  }
  return -1;
}

int CodeTables::Table::append(PyObject* value) {
  appended.push_back(py::Ref<>::newref(value));
  items.push_back(value);
  int index = static_cast<int>(items.size()) - 1;
  if (indexed) by_identity.emplace(value, index);
  return index;
}

py::Ref<> CodeTables::Table::tuple() const {
  if (original && appended.empty()) return original.copy();
  py::Ref<> result = check(PyTuple_New(static_cast<Py_ssize_t>(items.size())));
  for (std::size_t i = 0; i < items.size(); ++i) {
    PyTuple_SET_ITEM(result.get(), static_cast<Py_ssize_t>(i), Py_NewRef(items[i]));
  }
  return result;
}

CodeTables::CodeTables(py::Ref<> consts, py::Ref<> names, py::Ref<> varnames, py::Ref<> cellvars,
                       py::Ref<> freevars)
    : consts_(std::move(consts)),
      names_(std::move(names)),
      varnames_(std::move(varnames)),
      cellvars_(std::move(cellvars)),
      freevars_(std::move(freevars)) {}

py::Ref<> CodeTables::consts_tuple() const { return consts_.tuple(); }
py::Ref<> CodeTables::names_tuple() const { return names_.tuple(); }
py::Ref<> CodeTables::varnames_tuple() const { return varnames_.tuple(); }

// A name a local instruction uses that is no variable, cell or free variable becomes a new
// variable. (3.13 loads cells for closures with LOAD_FAST, so cell and free names are not new.)
void CodeTables::add_missing_locals(const InstructionList& instructions) {
  auto in_tuple = [](PyObject* tuple, PyObject* name) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); ++i)
      if (same_name(PyTuple_GET_ITEM(tuple, i), name)) return true;
    return false;
  };
  auto add = [&](PyObject* name) {
    if (!PyUnicode_Check(name) || varnames_.find_equal_name(name) >= 0) return;
    if (in_tuple(cellvars_.get(), name) || in_tuple(freevars_.get(), name)) return;
    varnames_.append(name);
  };
  for (const auto& instruction : instructions) {
    if (!opcode_info(instruction->opcode).has_local || !instruction->argval) continue;
    PyObject* argval = instruction->argval.get();
    if (PyTuple_Check(argval)) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(argval); ++i) add(PyTuple_GET_ITEM(argval, i));
    } else {
      add(argval);
    }
  }
}

// CPython 3.11 lays out "localsplus" as the variables, then the cell variables that are
// not also variables (those share the variable's slot), then the free variables.
void CodeTables::build_localsplus() {
  localsplus_ = Table(nullptr);
  for (PyObject* name : varnames_.items) localsplus_.append(name);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(cellvars_.get()); ++i) {
    PyObject* name = PyTuple_GET_ITEM(cellvars_.get(), i);
    if (varnames_.find_equal_name(name) < 0) localsplus_.append(name);
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(freevars_.get()); ++i) {
    localsplus_.append(PyTuple_GET_ITEM(freevars_.get(), i));
  }
}

int CodeTables::const_index(const Instruction& instruction, int index) {
  PyObject* value = instruction.argval.get();
  if (index >= 0 && index < static_cast<int>(consts_.items.size()) && consts_.items[index] == value) return index;
  int found = consts_.find_identical(value);
  return found >= 0 ? found : consts_.append(value);
}

int CodeTables::name_index(Table& table, const Instruction& instruction, int index, bool may_append) {
  return name_index(table, instruction, instruction.argval.get(), index, may_append);
}

// 3.13's paired local instructions: two indices of at most 4 bits each.
int CodeTables::packed_local_index(const Instruction& instruction) {
  auto [first, second] = packed_local_indices(instruction);
  return (first << 4) | second;
}

std::pair<int, int> CodeTables::packed_local_indices(const Instruction& instruction) {
  PyObject* names = instruction.argval.get();
  if (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) != 2) {
    throw PythonError::make(PyExc_TypeError, opname(instruction) + " needs a tuple of two names as argval");
  }
  int old_first = instruction.arg >= 0 ? instruction.arg >> 4 : -1;
  int old_second = instruction.arg >= 0 ? instruction.arg & 15 : -1;
  return {name_index(localsplus_, instruction, PyTuple_GET_ITEM(names, 0), old_first, false),
          name_index(localsplus_, instruction, PyTuple_GET_ITEM(names, 1), old_second, false)};
}

// A pair whose locals moved past the 16th slot (a resume function lays out its locals anew)
// no longer fits its argument: it becomes its two single-local halves, in the same order.
// The second half shares the first's position and handler; jumps keep aiming at the first.
void CodeTables::split_wide_pairs(InstructionList& instructions) {
  for (std::size_t i = 0; i < instructions.size(); ++i) {
    Instruction& pair = *instructions[i];
    const OpcodeInfo& info = opcode_info(pair.opcode);
    if (!info.packed_locals || !pair.argval) continue;
    auto [first, second] = packed_local_indices(pair);
    if (first <= 15 && second <= 15) continue;
    auto half = std::make_unique<Instruction>();
    half->opcode = info.second_half;
    half->argval = py::Ref<>::newref(PyTuple_GET_ITEM(pair.argval.get(), 1));
    half->exception_entry = pair.exception_entry;
    half->positions = pair.positions;
    pair.opcode = info.first_half;
    pair.argval = py::Ref<>::newref(PyTuple_GET_ITEM(pair.argval.get(), 0));
    pair.arg = -1;
    instructions.insert(instructions.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(half));
  }
}

int CodeTables::name_index(Table& table, const Instruction& instruction, PyObject* name, int index, bool may_append) {
  if (!PyUnicode_Check(name)) {
    throw PythonError::make(PyExc_TypeError, opname(instruction) + " needs a str argval");
  }
  if (index >= 0 && index < static_cast<int>(table.items.size()) && same_name(table.items[index], name)) return index;
  int found = table.find_equal_name(name);
  if (found >= 0) return found;
  if (!may_append) {
    throw PythonError::make(PyExc_ValueError, opname(instruction) + " refers to " + PyUnicode_AsUTF8(name) +
                                                  ", which is not a cell or free variable of the code");
  }
  return table.append(name);
}

void CodeTables::resolve_arguments(InstructionList& instructions) {
  add_missing_locals(instructions);
  build_localsplus();
  split_wide_pairs(instructions);
  for (auto& owned : instructions) {
    Instruction& instruction = *owned;
    ArgumentKind kind = argument_kind(instruction.opcode);
    if (kind == ArgumentKind::kNone) {
      instruction.arg = -1;
      continue;
    }
    if (kind == ArgumentKind::kJump) continue;
    if (!instruction.argval || kind == ArgumentKind::kNumber) {
      if (instruction.arg < 0) {
        throw PythonError::make(PyExc_ValueError, opname(instruction) + " has neither an arg nor an argval");
      }
      continue;
    }
    int index = instruction.arg >= 0 ? table_index(instruction.opcode, instruction.arg) : -1;
    switch (kind) {
      case ArgumentKind::kConst:
        index = const_index(instruction, index);
        break;
      case ArgumentKind::kName:
        index = name_index(names_, instruction, index, true);
        break;
      case ArgumentKind::kLocal:
        if (opcode_info(instruction.opcode).packed_locals) {
          instruction.arg = packed_local_index(instruction);
          continue;
        }
        index = name_index(localsplus_, instruction, index, false);
        break;
      case ArgumentKind::kCompare:
        index = -1;
        for (std::size_t i = 0; i < kCompareOpNames.size(); ++i) {
          if (PyUnicode_Check(instruction.argval.get()) &&
              PyUnicode_CompareWithASCIIString(instruction.argval.get(), kCompareOpNames[i]) == 0) {
            index = static_cast<int>(i);
          }
        }
        if (index < 0) throw PythonError::make(PyExc_ValueError, "COMPARE_OP argval is not a comparison operator");
        break;
      default:
        break;
    }
    instruction.arg = argument_for_index(instruction.opcode, index, instruction.arg);
  }
}

}  // namespace bytegraph::bytecode
