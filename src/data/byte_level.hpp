// SPDX-License-Identifier: MIT
// The byte-level alphabet of GPT-2 and every tokenizer after it (Llama 3, Qwen): each of the 256
// bytes is written as one printable code point in token strings, the printable Latin-1 bytes as
// themselves and the other 68 as U+0100 onwards, so that vocabularies hold no spaces or controls.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace fsdp {

// The byte that code point cp stands for, or -1 when cp is outside the alphabet.
int byte_level_byte(std::uint32_t cp);
// The code point that stands for byte b.
std::uint32_t byte_level_code_point(unsigned char b);

// The bytes a token string stands for, appended to out; false (out partly written) when the
// string is not valid UTF-8 or holds a character outside the alphabet.
bool byte_level_to_bytes(std::string_view token, std::string& out);

}  // namespace fsdp
