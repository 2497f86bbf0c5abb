// SPDX-License-Identifier: MIT
// The chat template's tokens, cut as Jinja2's lexer cuts them with trim_blocks and
// lstrip_blocks: text between tags (whitespace control already applied), tag delimiters, and
// the names, literals and operators inside tags. Comments leave nothing.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fsdp::chat {

struct Token {
  enum class Kind { text, var_begin, var_end, block_begin, block_end, name, string, integer,
                    floating, op, eof };
  Kind kind;
  std::string value;  // text, name, operator, or a string literal's value (escapes done)
  int line = 1;
  std::int64_t integer = 0;
  double floating = 0;
};

// Throws chat::Error "syntax error at line L: ..." on a template Jinja2 would not lex.
std::vector<Token> lex(const std::string& source);

// Python's str.isspace (what \s matches in Jinja2's patterns and str.strip() removes).
bool is_py_space(std::uint32_t cp);
// s without the Python whitespace at its end / at its start (byte offsets).
std::size_t rstrip_py_end(std::string_view s);
std::size_t lstrip_py_begin(std::string_view s);

}  // namespace fsdp::chat
