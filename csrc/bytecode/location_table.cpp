#include "bytecode/location_table.h"

#include <cstdint>

#include "bytecode/varint.h"
#include "python/errors.h"

namespace bytegraph::bytecode {

namespace {

constexpr int kShortForm0 = 0;     // codes 0-9: column group in the code
constexpr int kOneLineForm0 = 10;  // codes 10-12: line delta in the code
constexpr int kNoColumns = 13;
constexpr int kLongForm = 14;
constexpr int kNoLocation = 15;
constexpr int kMaxEntryUnits = 8;

Positions read_entry_positions(ByteReader& in, int code, int& line) {
  Positions p;
  if (code == kNoLocation) return p;
  if (code == kLongForm) {
    line += read_lsb_signed_varint(in);
    p.lineno = line;
    p.end_lineno = line + static_cast<int>(read_lsb_varint(in));
    p.col_offset = static_cast<int>(read_lsb_varint(in)) - 1;
    p.end_col_offset = static_cast<int>(read_lsb_varint(in)) - 1;
    return p;
  }
  if (code == kNoColumns) {
    line += read_lsb_signed_varint(in);
    p.lineno = p.end_lineno = line;
    return p;
  }
  if (code >= kOneLineForm0) {
    line += code - kOneLineForm0;
    p.lineno = p.end_lineno = line;
    p.col_offset = in.next();
    p.end_col_offset = in.next();
    return p;
  }
  std::uint8_t second = in.next();
  p.lineno = p.end_lineno = line;
  p.col_offset = (code - kShortForm0) * 8 + (second >> 4);
  p.end_col_offset = p.col_offset + (second & 15);
  return p;
}

void write_first_byte(std::string& out, int code, int units) {
  out.push_back(static_cast<char>(0x80 | (code << 3) | (units - 1)));
}

// One entry of at most 8 units; mirrors the form choice of CPython 3.11's
// write_location_info_entry, including which forms update the running line.
void write_entry(std::string& out, const Positions& p, int units, int& line) {
  if (p.lineno < 0) {
    write_first_byte(out, kNoLocation, units);
    return;
  }
  int line_delta = p.lineno - line;
  int column = p.col_offset, end_column = p.end_col_offset;
  if (column < 0 || end_column < 0) {
    if (p.end_lineno == p.lineno || p.end_lineno == -1) {
      write_first_byte(out, kNoColumns, units);
      write_lsb_signed_varint(out, line_delta);
      line = p.lineno;
      return;
    }
  } else if (p.end_lineno == p.lineno) {
    if (line_delta == 0 && column < 80 && end_column - column < 16 && end_column >= column) {
      write_first_byte(out, kShortForm0 + (column >> 3), units);
      out.push_back(static_cast<char>(((column & 7) << 4) | (end_column - column)));
      return;
    }
    if (line_delta >= 0 && line_delta < 3 && column < 128 && end_column < 128) {
      write_first_byte(out, kOneLineForm0 + line_delta, units);
      out.push_back(static_cast<char>(column));
      out.push_back(static_cast<char>(end_column));
      line = p.lineno;
      return;
    }
  }
  write_first_byte(out, kLongForm, units);
  write_lsb_signed_varint(out, line_delta);
  write_lsb_varint(out, static_cast<unsigned>(p.end_lineno - p.lineno));
  write_lsb_varint(out, static_cast<unsigned>(column + 1));
  write_lsb_varint(out, static_cast<unsigned>(end_column + 1));
  line = p.lineno;
}

}  // namespace

std::vector<LocationRun> parse_location_table(std::string_view table, int first_lineno) {
  ByteReader in{reinterpret_cast<const std::uint8_t*>(table.data()), table.size()};
  std::vector<LocationRun> runs;
  int line = first_lineno;
  while (!in.done()) {
    std::uint8_t first = in.next();
    if (!(first & 0x80)) {
      throw PythonError::make(PyExc_ValueError, "malformed location table: entry without start bit");
    }
    int code = (first >> 3) & 15;
    int units = (first & 7) + 1;
    runs.push_back({units, read_entry_positions(in, code, line)});
  }
  return runs;
}

std::vector<Positions> positions_per_unit(std::string_view table, int first_lineno, int code_units) {
  std::vector<Positions> result(static_cast<std::size_t>(code_units));
  std::size_t unit = 0;
  for (const LocationRun& run : parse_location_table(table, first_lineno)) {
    for (int i = 0; i < run.units && unit < result.size(); ++i) result[unit++] = run.positions;
  }
  return result;
}

std::string encode_location_table(const std::vector<LocationRun>& runs, int first_lineno) {
  std::string out;
  int line = first_lineno;
  for (const LocationRun& run : runs) {
    int units = run.units;
    for (; units > kMaxEntryUnits; units -= kMaxEntryUnits) {
      write_entry(out, run.positions, kMaxEntryUnits, line);
    }
    if (units > 0) write_entry(out, run.positions, units, line);
  }
  return out;
}

}  // namespace bytegraph::bytecode
