// CPython's location table (3.11 to 3.13) (`co_linetable`, Objects/locations.md).
//
// Each entry covers 1..8 code units: a first byte `1 | code(4) | length-1(3)`, then
// code-specific data relative to the line of the previous entry that set one (starting at
// co_firstlineno). Codes 0-9: same line, short columns; 10-12: line delta 0-2 and byte
// columns; 13: line only; 14: everything, as varints; 15: no location.
//
// The 3.11 assembler writes one entry per instruction (its EXTENDED_ARG prefixes and CACHE
// units included), splitting instructions longer than 8 units, and never merges runs of
// equal locations (Python/compile.c, assemble_emit_location); 3.12 and 3.13 merge
// consecutive instructions with equal locations into one run first (Python/assemble.c,
// assemble_location_info). The assembler builds the runs the way this interpreter's compiler
// does (kLocationEntriesSpanInstructions, generated) and encode_location_table splits them
// the same way, so that a decoded code object re-assembles byte for byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bytecode/instruction.h"

namespace bytegraph::bytecode {

struct LocationRun {
  int units = 0;  // code units covered
  Positions positions;
};

// One run per table entry, in order.
std::vector<LocationRun> parse_location_table(std::string_view table, int first_lineno);

// The positions of each code unit of a code object of `code_units` units (units past the
// table's end have no location).
std::vector<Positions> positions_per_unit(std::string_view table, int first_lineno, int code_units);

// Encodes runs the way CPython 3.11's assembler does (runs longer than 8 units are split).
std::string encode_location_table(const std::vector<LocationRun>& runs, int first_lineno);

}  // namespace bytegraph::bytecode
