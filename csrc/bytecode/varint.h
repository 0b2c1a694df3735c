// The two variable-length integer encodings of CPython 3.11 code objects. They differ on
// purpose (see Objects/exception_handling_notes.txt and Objects/locations.md):
// - exception table: 6-bit chunks, most significant chunk first, bit 6 = "more follows",
//   bit 7 free for the caller (it marks the first byte of an entry);
// - location table: 6-bit chunks, least significant chunk first, bit 6 = "more follows";
//   signed values are zig-zag-like: (magnitude << 1) | sign.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace bytegraph::bytecode {

// A read cursor over bytes that throws ValueError-style errors on truncated input.
struct ByteReader {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t pos = 0;

  bool done() const { return pos >= size; }
  std::uint8_t peek() const;
  std::uint8_t next();
};

// Exception-table varints. `first_bits` is OR-ed into the first byte written (0 or 0x80).
void write_msb_varint(std::string& out, unsigned value, std::uint8_t first_bits = 0);
unsigned read_msb_varint(ByteReader& in);

// Location-table varints.
void write_lsb_varint(std::string& out, unsigned value);
void write_lsb_signed_varint(std::string& out, int value);
unsigned read_lsb_varint(ByteReader& in);
int read_lsb_signed_varint(ByteReader& in);

}  // namespace bytegraph::bytecode
