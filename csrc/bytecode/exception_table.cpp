#include "bytecode/exception_table.h"

#include <cstdint>

#include "bytecode/varint.h"
#include "python/errors.h"

namespace bytegraph::bytecode {

namespace {
constexpr std::uint8_t kEntryStart = 0x80;
}

std::vector<RawExceptionEntry> parse_exception_table(std::string_view table) {
  ByteReader in{reinterpret_cast<const std::uint8_t*>(table.data()), table.size()};
  std::vector<RawExceptionEntry> entries;
  while (!in.done()) {
    if (!(in.peek() & kEntryStart)) {
      throw PythonError::make(PyExc_ValueError, "malformed exception table: entry without start marker");
    }
    RawExceptionEntry entry;
    entry.start = static_cast<int>(read_msb_varint(in));
    entry.end = entry.start + static_cast<int>(read_msb_varint(in));
    entry.target = static_cast<int>(read_msb_varint(in));
    unsigned depth_lasti = read_msb_varint(in);
    entry.depth = static_cast<int>(depth_lasti >> 1);
    entry.lasti = depth_lasti & 1;
    entries.push_back(entry);
  }
  return entries;
}

std::string encode_exception_table(const std::vector<RawExceptionEntry>& entries) {
  std::string out;
  for (const RawExceptionEntry& entry : entries) {
    write_msb_varint(out, static_cast<unsigned>(entry.start), kEntryStart);
    write_msb_varint(out, static_cast<unsigned>(entry.end - entry.start));
    write_msb_varint(out, static_cast<unsigned>(entry.target));
    write_msb_varint(out, (static_cast<unsigned>(entry.depth) << 1) | (entry.lasti ? 1u : 0u));
  }
  return out;
}

}  // namespace bytegraph::bytecode
