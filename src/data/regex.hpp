// SPDX-License-Identifier: MIT
// A PCRE2 regular expression over UTF-8 text with Unicode properties (\p{L}, \p{N}, caseless
// matching by Unicode case folding), JIT-compiled: the split patterns of tokenizer.json and the
// literal sets of added tokens. One match buffer per object: use one Regex per thread.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace fsdp {

class Regex {
 public:
  // Compiles pattern (a literal string when literal is true); DataError "<where>: ..." with
  // PCRE2's own message and the offset when it does not compile.
  Regex(const std::string& pattern, bool literal, std::string where);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Where successive calls to next() stand in a text.
  struct Cursor {
    std::size_t pos = 0;
    std::size_t last_end = std::string_view::npos;
  };
  // The next match in text (valid UTF-8: it is not checked again), iterating as Oniguruma's
  // find_iter does, which Hugging Face's Split uses: an empty match right where the previous
  // match ended is skipped by stepping one character on. False when there are no more.
  bool next(std::string_view text, Cursor& at, std::size_t& begin, std::size_t& end) const;
  // Whether the pattern matches starting exactly at text[at]; end receives where it stops.
  bool match_at(std::string_view text, std::size_t at, std::size_t& end) const;

 private:
  bool find(std::string_view text, std::size_t from, bool anchored, std::size_t& begin,
            std::size_t& end) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The pattern with every literal character escaped, for building alternations of literals.
std::string regex_escape(std::string_view literal);

}  // namespace fsdp
