// SPDX-License-Identifier: MIT
#include "data/hf_pattern.hpp"

#include "data/data_error.hpp"

namespace fsdp {

std::string pcre2_from_oniguruma(const std::string& p, const std::string& where) {
  const auto refuse = [&](const std::string& what) {
    throw DataError(where + ": " + what + " is not supported (Oniguruma and PCRE2 differ on it)");
  };
  static const char* kWord = "\\p{L}\\p{M}\\p{N}\\p{Pc}";
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      if (e == 's') {
        out += "\\p{White_Space}";
      } else if (e == 'S') {
        out += "\\P{White_Space}";
      } else if (e == 'w') {
        out += in_class ? std::string(kWord) : "[" + std::string(kWord) + "]";
      } else if (e == 'W') {
        if (in_class) refuse("\\W inside a character class");
        out += "[^" + std::string(kWord) + "]";
      } else if (e == 'b' || e == 'B' || e == 'h' || e == 'H') {
        if (!in_class || e == 'h' || e == 'H') refuse(std::string("\\") + e);
        out += '\\';
        out += e;  // [\b] is a backspace in both
      } else if (e == 'Q') {
        // Quoted text runs to \E or the end, copied as it is.
        const std::size_t stop = p.find("\\E", i + 1);
        const std::size_t to = stop == std::string::npos ? p.size() : stop + 2;
        out += p.substr(i - 1, to - (i - 1));
        i = to - 1;
      } else {
        out += '\\';
        out += e;
      }
    } else if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' first in the class (after an optional '^') is a literal in both.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
    } else if (in_class && c == '[') {
      if (p.compare(i, 2, "[:") != 0) refuse("a character class inside a class ([...[...]...])");
      const std::size_t stop = p.find(":]", i + 2);
      if (stop == std::string::npos) refuse("an unterminated [: :] class");
      out += p.substr(i, stop + 2 - i);  // a POSIX class such as [:alpha:]
      i = stop + 1;
    } else if (in_class && c == ']') {
      in_class = false;
      out += c;
    } else if (!in_class && (c == '^' || c == '$')) {
      refuse(std::string("the anchor ") + c);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace fsdp
