#include "bytecode/varint.h"

#include "python/errors.h"

namespace bytegraph::bytecode {

namespace {
constexpr std::uint8_t kContinue = 0x40;
constexpr std::uint8_t kChunk = 0x3F;
}  // namespace

std::uint8_t ByteReader::peek() const {
  if (done()) throw PythonError::make(PyExc_ValueError, "bytecode table ends in the middle of an entry");
  return data[pos];
}

std::uint8_t ByteReader::next() {
  std::uint8_t byte = peek();
  ++pos;
  return byte;
}

void write_msb_varint(std::string& out, unsigned value, std::uint8_t first_bits) {
  int shift = 0;
  while (shift + 6 < 32 && (value >> (shift + 6)) != 0) shift += 6;
  for (; shift > 0; shift -= 6) {
    out.push_back(static_cast<char>(((value >> shift) & kChunk) | kContinue | first_bits));
    first_bits = 0;
  }
  out.push_back(static_cast<char>((value & kChunk) | first_bits));
}

unsigned read_msb_varint(ByteReader& in) {
  std::uint8_t byte = in.next();
  unsigned value = byte & kChunk;
  while (byte & kContinue) {
    byte = in.next();
    value = (value << 6) | (byte & kChunk);
  }
  return value;
}

void write_lsb_varint(std::string& out, unsigned value) {
  while (value >= kContinue) {
    out.push_back(static_cast<char>((value & kChunk) | kContinue));
    value >>= 6;
  }
  out.push_back(static_cast<char>(value));
}

void write_lsb_signed_varint(std::string& out, int value) {
  unsigned magnitude = value < 0 ? 0u - static_cast<unsigned>(value) : static_cast<unsigned>(value);
  write_lsb_varint(out, (magnitude << 1) | (value < 0 ? 1u : 0u));
}

unsigned read_lsb_varint(ByteReader& in) {
  std::uint8_t byte = in.next();
  unsigned value = byte & kChunk;
  int shift = 0;
  while (byte & kContinue) {
    byte = in.next();
    shift += 6;
    value |= static_cast<unsigned>(byte & kChunk) << shift;
  }
  return value;
}

int read_lsb_signed_varint(ByteReader& in) {
  unsigned raw = read_lsb_varint(in);
  int magnitude = static_cast<int>(raw >> 1);
  return (raw & 1) ? -magnitude : magnitude;
}

}  // namespace bytegraph::bytecode
