// The tables a new code object's arguments index (co_consts, co_names, co_varnames,
// co_cellvars, co_freevars), and the arguments that match each instruction's `argval`.
//
// An instruction keeps its `arg` when it already points at its argval (constants compared
// by identity, since 0 == 0.0 == False and 0.0 vs -0.0 must stay apart; names by value);
// otherwise the argval is looked up, and appended to co_consts/co_names (or, for a new
// LOAD_FAST/STORE_FAST/DELETE_FAST name, to co_varnames) when absent. Cell and free
// variables are never invented: an unknown one is a ValueError.
#pragma once

#include <Python.h>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bytecode/instruction.h"
#include "python/ref.h"

namespace bytegraph::bytecode {

class CodeTables {
 public:
  CodeTables(py::Ref<> consts, py::Ref<> names, py::Ref<> varnames, py::Ref<> cellvars, py::Ref<> freevars);

  // Sets every instruction's `arg` from its `argval` (see above); jumps are left alone. A
  // paired local instruction whose locals no longer fit its argument is split in two.
  void resolve_arguments(InstructionList& instructions);

  // The final tuples (the originals when nothing was appended).
  py::Ref<> consts_tuple() const;
  py::Ref<> names_tuple() const;
  py::Ref<> varnames_tuple() const;
  const py::Ref<>& cellvars() const { return cellvars_; }
  const py::Ref<>& freevars() const { return freevars_; }

 private:
  // A growable copy of a tuple that keeps the original object while nothing is appended.
  struct Table {
    py::Ref<> original;
    std::vector<PyObject*> items;  // borrowed from `original` or owned by `appended`
    std::vector<py::Ref<>> appended;
    std::unordered_map<PyObject*, int> by_identity;  // built on first lookup
    bool indexed = false;

    explicit Table(py::Ref<> tuple);
    int find_identical(PyObject* value);
    int find_equal_name(PyObject* name);
    int append(PyObject* value);
    py::Ref<> tuple() const;
  };

  int const_index(const Instruction& instruction, int index);
  int name_index(Table& table, const Instruction& instruction, int index, bool may_append);
  int name_index(Table& table, const Instruction& instruction, PyObject* name, int index, bool may_append);
  int packed_local_index(const Instruction& instruction);
  std::pair<int, int> packed_local_indices(const Instruction& instruction);
  void split_wide_pairs(InstructionList& instructions);
  void add_missing_locals(const InstructionList& instructions);
  void build_localsplus();

  Table consts_, names_, varnames_;
  py::Ref<> cellvars_, freevars_;
  Table localsplus_{nullptr};
};

}  // namespace bytegraph::bytecode
