// SPDX-License-Identifier: MIT
// Jinja2's lexer as transformers configures it, rule for rule (jinja2/lexer.py):
//  - newlines are normalized to \n and one trailing newline of the template is dropped;
//  - "{%-", "{{-", "{#-" strip all whitespace before the tag; "-%}", "-}}", "-#}" all after it;
//  - trim_blocks: one "\n" right after "%}" or "#}" is dropped ("+%}" keeps it);
//  - lstrip_blocks: spaces and tabs between a line's start and "{%" or "{#" are dropped
//    ("{%+" keeps them; never before "{{"). A "line's start" is after a "\n" in the text, or
//    the text's own start when the previous tag ended with "\n" (or at the template's start).
// "Whitespace" is Python's (str.isspace), as \s is in Jinja2's patterns.
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "data/chat/chat_lexer.hpp"
#include "data/chat/chat_value.hpp"
#include "data/utf8.hpp"

namespace fsdp::chat {

bool is_py_space(std::uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

std::size_t rstrip_py_end(std::string_view s) {
  std::size_t end = s.size();
  while (end > 0) {
    std::size_t b = utf8_before(s, end);
    if (!is_py_space(utf8_at(s, b).value)) break;
    end = b;
  }
  return end;
}

std::size_t lstrip_py_begin(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    CodePoint c = utf8_at(s, i);
    if (!is_py_space(c.value)) break;
    i += c.bytes;
  }
  return i;
}

namespace {

std::string normalize_newlines(const std::string& raw) {
  std::string s;
  s.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r') {
      s += '\n';
      if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
    } else {
      s += raw[i];
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();  // keep_trailing_newline=False
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      std::size_t open = find_tag(pos_);
      if (open == std::string::npos) {
        emit_text(src_.substr(pos_), pos_);
        break;
      }
      char kind = src_[open + 1];
      char sign = open + 2 < src_.size() ? src_[open + 2] : 0;
      if (sign != '-' && sign != '+') sign = 0;
      std::string text = src_.substr(pos_, open - pos_);
      if (sign == '-') {
        text.resize(rstrip_py_end(text));
      } else if (sign != '+' && kind != '{') {
        std::size_t nl = text.rfind('\n');
        std::size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting_) && l_pos < text.size() &&
            lstrip_py_begin(std::string_view(text).substr(l_pos)) == text.size() - l_pos)
          text.resize(l_pos);
      }
      emit_text(text, pos_);
      pos_ = open + 2 + (sign ? 1 : 0);
      if (kind == '#') skip_comment(open);
      else tag(kind == '{', open);
    }
    tokens_.push_back({Token::Kind::eof, "", line_at(src_.size())});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& what) {
    throw Error("syntax error at line " + std::to_string(line_at(at)) + ": " + what);
  }

  int line_at(std::size_t at) {
    for (; counted_ < at && counted_ < src_.size(); ++counted_)
      if (src_[counted_] == '\n') ++line_;
    return line_;
  }

  std::size_t find_tag(std::size_t from) const {
    for (std::size_t k = src_.find('{', from); k != std::string::npos; k = src_.find('{', k + 1))
      if (k + 1 < src_.size() && std::strchr("{%#", src_[k + 1]) && src_[k + 1] != 0) return k;
    return std::string::npos;
  }

  void emit_text(const std::string& text, std::size_t at) {
    if (!text.empty()) tokens_.push_back({Token::Kind::text, text, line_at(at)});
  }

  bool starts(const char* s) const { return src_.compare(pos_, std::strlen(s), s) == 0; }

  void skip_space() {
    pos_ += lstrip_py_begin(std::string_view(src_).substr(pos_));
  }

  // The rest of a comment: up to "#}", "-#}" (and the whitespace after) or "+#}".
  void skip_comment(std::size_t open) {
    std::size_t k = src_.find("#}", pos_);
    if (k == std::string::npos) fail(open, "missing end of comment tag");
    char sign = k > pos_ && (src_[k - 1] == '-' || src_[k - 1] == '+') ? src_[k - 1] : 0;
    pos_ = k + 2;
    if (sign == '-') skip_space();
    else if (!sign && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
    line_starting_ = src_[pos_ - 1] == '\n';
  }

  // The end of a tag, when it is at pos_: advances past it (and what it trims).
  bool tag_end(bool variable) {
    if (variable) {
      if (starts("-}}")) {
        pos_ += 3;
        skip_space();
      } else if (starts("}}")) {
        pos_ += 2;
      } else {
        return false;
      }
    } else if (starts("+%}")) {
      pos_ += 3;
    } else if (starts("-%}")) {
      pos_ += 3;
      skip_space();
    } else if (starts("%}")) {
      pos_ += 2;
      if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
    } else {
      return false;
    }
    line_starting_ = src_[pos_ - 1] == '\n';
    return true;
  }

  void tag(bool variable, std::size_t open) {
    tokens_.push_back({variable ? Token::Kind::var_begin : Token::Kind::block_begin, "",
                       line_at(open)});
    if (!variable) refuse_raw(open);
    std::string braces;  // the closers expected, innermost last
    for (;;) {
      if (pos_ >= src_.size()) fail(open, "unexpected end of template inside a tag");
      std::size_t at = pos_;
      if (braces.empty() && tag_end(variable)) {
        tokens_.push_back({variable ? Token::Kind::var_end : Token::Kind::block_end, "",
                           line_at(at)});
        return;
      }
      CodePoint c = utf8_at(src_, pos_);
      unsigned char ch = static_cast<unsigned char>(src_[pos_]);
      if (is_py_space(c.value)) {
        pos_ += c.bytes;
      } else if (std::isdigit(ch)) {
        number(at);
      } else if (std::isalpha(ch) || ch == '_') {
        std::size_t end = pos_;
        while (end < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[end])) ||
                                     src_[end] == '_'))
          ++end;
        tokens_.push_back({Token::Kind::name, src_.substr(pos_, end - pos_), line_at(at)});
        pos_ = end;
      } else if (ch == '\'' || ch == '"') {
        string_literal(at);
      } else {
        op(at, braces);
      }
    }
  }

  void refuse_raw(std::size_t open) {
    std::size_t k = pos_;
    while (k < src_.size() && is_py_space(static_cast<unsigned char>(src_[k]))) ++k;
    if (src_.compare(k, 3, "raw") == 0 && (k + 3 >= src_.size() || !std::isalnum(
                                               static_cast<unsigned char>(src_[k + 3]))))
      throw Error("tag 'raw' at line " + std::to_string(line_at(open)) + " is not supported");
  }

  void op(std::size_t at, std::string& braces) {
    static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* o : two)
      if (starts(o)) {
        tokens_.push_back({Token::Kind::op, o, line_at(at)});
        pos_ += 2;
        return;
      }
    char ch = src_[pos_];
    if (!std::strchr("+-/*%~[](){}><=.:|,;", ch) || ch == 0)
      fail(at, std::string("unexpected character '") + ch + "'");
    if (ch == '(' || ch == '[' || ch == '{') braces += ch == '(' ? ')' : ch == '[' ? ']' : '}';
    if (ch == ')' || ch == ']' || ch == '}') {
      if (braces.empty() || braces.back() != ch) fail(at, std::string("unexpected '") + ch + "'");
      braces.pop_back();
    }
    tokens_.push_back({Token::Kind::op, std::string(1, ch), line_at(at)});
    ++pos_;
  }

  // Digits with single underscores between them, from pos_.
  std::string digits(bool (*is_digit)(char)) {
    std::string d;
    while (pos_ < src_.size() && (is_digit(src_[pos_]) ||
                                  (src_[pos_] == '_' && !d.empty() && pos_ + 1 < src_.size() &&
                                   is_digit(src_[pos_ + 1])))) {
      if (src_[pos_] != '_') d += src_[pos_];
      ++pos_;
    }
    return d;
  }

  void number(std::size_t at) {
    static auto dec = [](char c) { return c >= '0' && c <= '9'; };
    static auto hex = [](char c) { return hex_value(c) >= 0; };
    static auto oct = [](char c) { return c >= '0' && c <= '7'; };
    static auto bin = [](char c) { return c == '0' || c == '1'; };
    Token t{Token::Kind::integer, "", line_at(at)};
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() && std::strchr("xXoObB", src_[pos_ + 1]) &&
        src_[pos_ + 1] != 0) {
      char base = static_cast<char>(std::tolower(src_[pos_ + 1]));
      pos_ += 2;
      if (pos_ < src_.size() && src_[pos_] == '_') ++pos_;
      std::string d = digits(base == 'x' ? +hex : base == 'o' ? +oct : +bin);
      if (d.empty()) fail(at, "bad number");
      try {
        t.integer = std::stoll(d, nullptr, base == 'x' ? 16 : base == 'o' ? 8 : 2);
      } catch (const std::out_of_range&) {
        fail(at, "integer 0" + std::string(1, base) + d + " is too large");
      }
      tokens_.push_back(t);
      return;
    }
    bool after_dot = at > 0 && src_[at - 1] == '.';  // "x.0.1" is x[0][1], as Jinja reads it
    std::string text = digits(+dec);
    bool is_float = false;
    if (!after_dot && pos_ + 1 < src_.size() && src_[pos_] == '.' && dec(src_[pos_ + 1])) {
      ++pos_;
      text += "." + digits(+dec);
      is_float = true;
    }
    if (!after_dot && pos_ + 1 < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      std::size_t save = pos_++;
      std::string sign;
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) sign = src_[pos_++];
      std::string e = digits(+dec);
      if (e.empty()) pos_ = save;
      else text += "e" + sign + e, is_float = true;
    }
    if (is_float) {
      t.kind = Token::Kind::floating;
      // strtod, not stod: past double's range Python reads inf (1e999) or 0.0 (1e-999).
      t.floating = std::strtod(text.c_str(), nullptr);
    } else {
      try {
        t.integer = std::stoll(text);
      } catch (const std::out_of_range&) {
        fail(at, "integer " + text + " is too large");
      }
    }
    tokens_.push_back(t);
  }

  // A quoted string, its escapes read as Python's unicode-escape codec reads them.
  void string_literal(std::size_t at) {
    char quote = src_[pos_++];
    std::string value;
    for (;;) {
      if (pos_ >= src_.size()) fail(at, "unterminated string");
      char c = src_[pos_];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++pos_;
        continue;
      }
      if (pos_ + 1 >= src_.size()) fail(at, "unterminated string");
      char e = src_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case '\n': break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x': value_escape(value, at, 2); break;
        case 'u': value_escape(value, at, 4); break;
        case 'U': value_escape(value, at, 8); break;
        default:
          if (e >= '0' && e <= '7') {
            unsigned v = e - '0';
            for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k)
              v = v * 8 + (src_[pos_++] - '0');
            utf8_append(value, v);
          } else if (e == 'N' || static_cast<unsigned char>(e) >= 0x80) {
            throw Error("string escape '\\" + std::string(1, e) + "' at line " +
                        std::to_string(line_at(at)) + " is not supported");
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    ++pos_;
    tokens_.push_back({Token::Kind::string, value, line_at(at)});
  }

  void value_escape(std::string& value, std::size_t at, int n) {
    std::uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      int h = pos_ < src_.size() ? hex_value(src_[pos_]) : -1;
      if (h < 0) fail(at, "truncated \\x, \\u or \\U escape");
      v = v * 16 + h;
      ++pos_;
    }
    if (v >= 0x110000 || (v >= 0xd800 && v < 0xe000))
      fail(at, "escape of a surrogate or a code point past U+10FFFF");
    utf8_append(value, v);
  }

  std::string src_;
  std::size_t pos_ = 0;
  std::size_t counted_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(const std::string& source) {
  // The lexer steps by code point: bytes that are not UTF-8 (a chat_template.jinja is read as
  // it is; transformers' open() would fail to decode it too) are refused first.
  if (const std::size_t bad = utf8_invalid_at(source); bad != source.size())
    throw Error("not UTF-8 at byte " + std::to_string(bad + 1));
  return Lexer(normalize_newlines(source)).run();
}

}  // namespace fsdp::chat
