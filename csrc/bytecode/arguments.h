// What an instruction's argument means, given the code object's tables (CPython 3.11):
// - hasconst (LOAD_CONST, KW_NAMES): an index into co_consts;
// - hasname: an index into co_names, except LOAD_GLOBAL: (index << 1) | push_null;
// - haslocal and hasfree: an index into the "localsplus" names (locals, then cells that are
//   not arguments, then free variables), so MAKE_CELL/LOAD_DEREF share LOAD_FAST's indexing;
// - COMPARE_OP: an index into opcode.cmp_op.
// Other arguments (counts, flags, BINARY_OP's operator) carry no resolved value here.
#pragma once

#include <Python.h>

#include <string>

#include "python/ref.h"

namespace bytegraph::bytecode {

enum class ArgumentKind { kNone, kConst, kName, kLocal, kCompare, kJump, kNumber };

ArgumentKind argument_kind(int opcode);

// The index part of an argument (LOAD_GLOBAL keeps its NULL bit in bit 0).
int table_index(int opcode, int arg);
// The argument for `index` with the extra bits of `old_arg` kept (LOAD_GLOBAL's NULL bit).
int argument_for_index(int opcode, int index, int old_arg);

// The tables an argument indexes, borrowed from a code object.
struct ArgumentTables {
  PyObject* consts;           // borrowed tuple
  PyObject* names;            // borrowed tuple
  PyObject* localsplusnames;  // borrowed tuple
};

// The resolved value of `arg` (a new reference), or null for kinds without one.
// Raises ValueError (as PythonError) when the index is out of range.
py::Ref<> resolve_argval(const ArgumentTables& tables, int opcode, int arg);

// The human-readable argument, as `dis` shows it (without parentheses).
std::string argument_repr(int opcode, int arg, PyObject* argval /* borrowed, may be null */,
                          int jump_target_offset);

}  // namespace bytegraph::bytecode
