// SPDX-License-Identifier: MIT
#include "data/byte_level.hpp"

#include <array>

#include "data/utf8.hpp"

namespace fsdp {
namespace {

// Both directions, built once. The 68 bytes that are not printable Latin-1 (controls, space,
// DEL, the C1 controls, NBSP and the soft hyphen) get U+0100, U+0101, ... in byte order.
struct Alphabet {
  std::array<std::uint32_t, 256> code_point{};
  std::array<std::int16_t, 0x144> byte{};  // the highest code point used is U+0143
  Alphabet() {
    byte.fill(-1);
    std::uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      code_point[std::size_t(b)] = printable ? std::uint32_t(b) : next++;
      byte[code_point[std::size_t(b)]] = std::int16_t(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

int byte_level_byte(std::uint32_t cp) {
  const Alphabet& a = alphabet();
  return cp < a.byte.size() ? a.byte[cp] : -1;
}

std::uint32_t byte_level_code_point(unsigned char b) { return alphabet().code_point[b]; }

bool byte_level_to_bytes(std::string_view token, std::string& out) {
  if (utf8_invalid_at(token) != token.size()) return false;
  for (std::size_t i = 0; i < token.size();) {
    const CodePoint cp = utf8_at(token, i);
    const int b = byte_level_byte(cp.value);
    if (b < 0) return false;
    out += char(b);
    i += cp.bytes;
  }
  return true;
}

}  // namespace fsdp
