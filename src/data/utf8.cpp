// SPDX-License-Identifier: MIT
#include "data/utf8.hpp"

#include <cstring>

namespace fsdp {
namespace {

// The length of the well-formed sequence at s[i], or 0 when the bytes there are not one. Table 3-7
// of the Unicode standard: the second byte's range depends on the first (no overlong forms, no
// surrogates, nothing past U+10FFFF); *subpart receives how many bytes form a maximal prefix of
// some well-formed sequence (what one U+FFFD replaces).
std::size_t well_formed_at(std::string_view s, std::size_t i, std::size_t* subpart) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    if (subpart) *subpart = 1;
    return 0;
  }
  std::size_t k = 1;
  for (; k < need && i + k < s.size(); ++k) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) break;
  }
  if (k == need) return need;
  if (subpart) *subpart = k;
  return 0;
}

}  // namespace

std::size_t utf8_invalid_at(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    // Most text is ASCII: take 8 bytes at a time while none has its top bit set.
    if (i + 8 <= s.size()) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if ((w & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    const std::size_t n = well_formed_at(s, i, nullptr);
    if (n == 0) return i;
    i += n;
  }
  return s.size();
}

CodePoint utf8_at(std::string_view s, std::size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return {c, 1};
  const std::size_t n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  std::uint32_t cp = c & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return {cp, n};
}

std::size_t utf8_before(std::string_view s, std::size_t i) {
  do --i;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80);
  return i;
}

void utf8_append(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

std::string utf8_lossy(std::string_view bytes) {
  const std::size_t bad = utf8_invalid_at(bytes);
  if (bad == bytes.size()) return std::string(bytes);
  std::string out(bytes.substr(0, bad));
  for (std::size_t i = bad; i < bytes.size();) {
    std::size_t subpart = 0;
    const std::size_t n = well_formed_at(bytes, i, &subpart);
    if (n > 0) {
      out.append(bytes.data() + i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      i += subpart;
    }
  }
  return out;
}

}  // namespace fsdp
