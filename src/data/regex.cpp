// SPDX-License-Identifier: MIT
#define PCRE2_CODE_UNIT_WIDTH 8
#include "data/regex.hpp"

#include <pcre2.h>

#include <cctype>

#include "data/data_error.hpp"
#include "data/utf8.hpp"

namespace fsdp {
namespace {

struct CodeFree {
  void operator()(pcre2_code* p) const { pcre2_code_free(p); }
};
struct MatchDataFree {
  void operator()(pcre2_match_data* p) const { pcre2_match_data_free(p); }
};
struct ContextFree {
  void operator()(pcre2_match_context* p) const { pcre2_match_context_free(p); }
};
struct StackFree {
  void operator()(pcre2_jit_stack* p) const { pcre2_jit_stack_free(p); }
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof buf) < 0) return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

struct Regex::Impl {
  std::unique_ptr<pcre2_code, CodeFree> code;
  std::unique_ptr<pcre2_match_data, MatchDataFree> match;
  std::unique_ptr<pcre2_match_context, ContextFree> context;
  std::unique_ptr<pcre2_jit_stack, StackFree> stack;
  std::string where;
};

Regex::Regex(const std::string& pattern, bool literal, std::string where)
    : impl_(std::make_unique<Impl>()) {
  impl_->where = std::move(where);
  int err = 0;
  PCRE2_SIZE at = 0;
  // PCRE2_LITERAL does not go with PCRE2_UCP: a literal is compiled escaped instead.
  const std::string source = literal ? regex_escape(pattern) : pattern;
  impl_->code.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                  PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr));
  if (!impl_->code)
    throw DataError(impl_->where + ": PCRE2 cannot compile the pattern: " + pcre2_message(err) +
                    " at offset " + std::to_string(at));
  // JIT makes matching several times faster; where the platform has no JIT, PCRE2's interpreter
  // gives the same matches.
  if (pcre2_jit_compile(impl_->code.get(), PCRE2_JIT_COMPLETE) == 0) {
    // The default 32 KiB JIT stack is enough for these patterns; 8 MiB bounds a hostile one.
    impl_->stack.reset(pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr));
    impl_->context.reset(pcre2_match_context_create(nullptr));
    if (!impl_->stack || !impl_->context) throw std::bad_alloc();
    pcre2_jit_stack_assign(impl_->context.get(), nullptr, impl_->stack.get());
  }
  impl_->match.reset(pcre2_match_data_create_from_pattern(impl_->code.get(), nullptr));
  if (!impl_->match) throw std::bad_alloc();
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

bool Regex::find(std::string_view text, std::size_t from, bool anchored, std::size_t& begin,
                 std::size_t& end) const {
  // The text was checked once for UTF-8 by the caller; PCRE2 would otherwise check all of it
  // on every call, which is quadratic over a long text.
  const std::uint32_t options = PCRE2_NO_UTF_CHECK | (anchored ? PCRE2_ANCHORED : 0);
  const int rc = pcre2_match(impl_->code.get(), reinterpret_cast<PCRE2_SPTR>(text.data()),
                             text.size(), from, options, impl_->match.get(), impl_->context.get());
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0)
    throw DataError(impl_->where + ": matching gave up at byte " + std::to_string(from) +
                    " of a text: " + pcre2_message(rc));
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(impl_->match.get());
  begin = ovector[0];
  end = ovector[1];
  return true;
}

bool Regex::next(std::string_view text, Cursor& at, std::size_t& begin, std::size_t& end) const {
  while (at.pos <= text.size()) {
    if (!find(text, at.pos, false, begin, end)) {
      at.pos = text.size() + 1;
      return false;
    }
    if (begin == end && end == at.last_end) {
      at.pos += at.pos < text.size() ? utf8_at(text, at.pos).bytes : 1;
      continue;
    }
    at.pos = at.last_end = end;
    return true;
  }
  return false;
}

bool Regex::match_at(std::string_view text, std::size_t at, std::size_t& end) const {
  std::size_t begin = 0;
  return find(text, at, true, begin, end);
}

std::string regex_escape(std::string_view literal) {
  std::string out;
  out.reserve(literal.size() * 2);
  for (char c : literal) {
    const unsigned char u = static_cast<unsigned char>(c);
    // In UTF mode a backslash before any ASCII character that is not a letter or digit makes it
    // literal; letters, digits and the bytes of other characters stand for themselves.
    if (u < 0x80 && !std::isalnum(u)) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace fsdp
