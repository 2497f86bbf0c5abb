// SPDX-License-Identifier: MIT
// UTF-8 helpers the tokenizers share: validation, stepping over one code point, and Rust's
// lossy decoding (what Hugging Face's byte-level decoder returns for bytes that are not UTF-8).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fsdp {

// The byte offset of the first ill-formed sequence in s, or s.size() when s is valid UTF-8
// (shortest forms only, no surrogates, nothing above U+10FFFF).
std::size_t utf8_invalid_at(std::string_view s);

// The code point starting at s[i] and its length in bytes; s must be valid UTF-8 there.
struct CodePoint {
  std::uint32_t value;
  std::size_t bytes;
};
CodePoint utf8_at(std::string_view s, std::size_t i);
// The start of the code point that ends just before s[i] (i > 0, s valid UTF-8).
std::size_t utf8_before(std::string_view s, std::size_t i);
// The UTF-8 form of one code point (< 0x110000) appended to out.
void utf8_append(std::string& out, std::uint32_t cp);

// bytes with every ill-formed sequence replaced by U+FFFD, one per maximal subpart (the
// Unicode standard's recommended practice, which Rust's String::from_utf8_lossy follows).
std::string utf8_lossy(std::string_view bytes);

}  // namespace fsdp
