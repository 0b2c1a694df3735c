// What an instruction's argument means, given the code object's tables:
// - hasconst (LOAD_CONST, KW_NAMES, RETURN_CONST): an index into co_consts;
// - hasname: an index into co_names shifted past the opcode's flag bits (`arg_shift` in the
//   generated tables: LOAD_GLOBAL's push-NULL bit, LOAD_ATTR's method bit on 3.12+, ...);
// - haslocal and hasfree: an index into the "localsplus" names (locals, then cells that are
//   not arguments, then free variables), so MAKE_CELL/LOAD_DEREF share LOAD_FAST's indexing;
//   3.13's paired instructions (LOAD_FAST_LOAD_FAST, ...) hold two such indices, and their
//   argval is a tuple of the two names;
// - COMPARE_OP: an index into opcode.cmp_op, shifted past its specialisation bits.
// Other arguments (counts, flags, BINARY_OP's operator) carry no resolved value here.
#pragma once

#include <Python.h>

#include <string>

#include "python/ref.h"

namespace bytegraph::bytecode {

enum class ArgumentKind { kNone, kConst, kName, kLocal, kCompare, kJump, kNumber };

ArgumentKind argument_kind(int opcode);

// The index part of an argument (the low `arg_shift` bits are flags).
int table_index(int opcode, int arg);
// The argument for `index` with the flag bits of `old_arg` kept; a comparison without an
// old argument gets the bits the compiler writes for it.
int argument_for_index(int opcode, int index, int old_arg);
// The argument's flag bits (below the table index).
int argument_flags(int opcode, int arg);

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
