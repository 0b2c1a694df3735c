// CPython 3.11's exception table (`co_exceptiontable`) in code units, as raw ranges.
// Each entry is four MSB-first varints: start, length, target, (depth << 1) | lasti; the
// first byte of an entry has bit 7 set. Ranges are half-open [start, end) and do not overlap.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bytegraph::bytecode {

struct RawExceptionEntry {
  int start = 0;   // first code unit covered
  int end = 0;     // one past the last code unit covered
  int target = 0;  // code unit of the handler
  int depth = 0;   // stack depth to unwind to
  bool lasti = false;

  bool operator==(const RawExceptionEntry&) const = default;
};

std::vector<RawExceptionEntry> parse_exception_table(std::string_view table);
std::string encode_exception_table(const std::vector<RawExceptionEntry>& entries);

}  // namespace bytegraph::bytecode
