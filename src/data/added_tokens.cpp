// SPDX-License-Identifier: MIT
#include "data/added_tokens.hpp"

#include <algorithm>

#include "data/byte_level.hpp"
#include "data/utf8.hpp"

namespace fsdp {

AddedTokens AddedTokens::from_json(const JsonAt& list, const BpeModel& model,
                                   const Normalizer& normalizer) {
  AddedTokens a;
  // Hugging Face adds the tokens in file order: one already in the vocabulary keeps its id,
  // the others are numbered from the vocabulary's size on.
  std::int32_t next_id = std::int32_t(model.entries());
  const std::size_t n = list.is_null() ? 0 : list.array_size();
  for (std::size_t i = 0; i < n; ++i) {
    const JsonAt entry = list.at(i);
    Token t;
    t.content = entry.string("content");
    t.id = entry.at("id").id();
    t.special = entry.boolean("special");
    t.lstrip = entry.boolean("lstrip");
    t.rstrip = entry.boolean("rstrip");
    t.single_word = entry.boolean("single_word");
    t.normalized = entry.boolean("normalized");
    if (t.content.empty()) continue;  // Hugging Face ignores these
    if (a.id_of(t.content) >= 0) entry.at("content").fail("the same content as an earlier token");
    std::string bytes;
    const bool byte_level = byte_level_to_bytes(t.content, bytes);
    const std::int32_t in_vocab = byte_level ? model.id_of_bytes(bytes) : -1;
    const std::int32_t expected = in_vocab >= 0 ? in_vocab : next_id++;
    if (t.id != expected)
      entry.at("id").fail("is " + std::to_string(t.id) + ", but Hugging Face gives this token " +
                          std::to_string(expected) +
                          (in_vocab >= 0 ? " (its id in model.vocab)" : " (the next free id)"));
    // The byte-level decoder reads a token's characters as bytes when all of them are in the
    // alphabet, and takes its UTF-8 as it is otherwise.
    t.bytes = byte_level ? bytes : t.content;
    a.by_id_[t.id] = a.tokens_.size();
    a.tokens_.push_back(std::move(t));
  }
  a.build_set(false, normalizer, list.where(), a.raw_);
  a.build_set(true, normalizer, list.where(), a.normalized_);
  const std::string where = list.where() + " (whitespace and word characters)";
  a.word_char_ =
      std::make_unique<Regex>(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}])", false, where);
  a.space_char_ = std::make_unique<Regex>(R"(\p{White_Space})", false, where);
  return a;
}

void AddedTokens::build_set(bool normalized, const Normalizer& normalizer, const std::string& where,
                            MatchSet& set) {
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].normalized != normalized) continue;
    std::string scratch;
    std::string text(normalized ? normalizer.apply(tokens_[i].content, scratch)
                                : std::string_view(tokens_[i].content));
    if (set.by_text.emplace(text, i).second) texts.push_back(text);
  }
  if (texts.empty()) return;
  // PCRE2 tries alternatives in order, so longest first gives the leftmost-longest match that
  // Hugging Face's Aho-Corasick automaton finds.
  std::stable_sort(texts.begin(), texts.end(),
                   [](const std::string& x, const std::string& y) { return x.size() > y.size(); });
  std::string pattern;
  for (const std::string& t : texts) pattern += (pattern.empty() ? "" : "|") + regex_escape(t);
  set.regex = std::make_unique<Regex>(pattern, false, where);
}

void AddedTokens::split(std::string_view text, bool normalized,
                        Callback<std::string_view, std::int32_t> emit) const {
  if (text.empty()) return;
  const MatchSet& set = normalized ? normalized_ : raw_;
  if (!set.regex) {
    emit(text, -1);
    return;
  }
  Regex::Cursor at;
  std::size_t done = 0, begin = 0, end = 0;
  while (set.regex->next(text, at, begin, end)) {
    const Token& t = tokens_[set.by_text.at(std::string(text.substr(begin, end - begin)))];
    if (t.single_word && ((begin > 0 && ends_with_word(text.substr(0, begin))) ||
                          (end < text.size() && starts_with_word(text.substr(end)))))
      continue;  // part of a longer word
    // lstrip and rstrip take the whitespace beside the token into it (never whitespace an
    // earlier token took already).
    if (t.lstrip) begin = std::max(trailing_space_start(text.substr(0, begin)), done);
    if (t.rstrip) end += leading_space_end(text.substr(end));
    if (done < begin) emit(text.substr(done, begin - done), -1);
    emit(text.substr(begin, end - begin), t.id);
    done = end;
  }
  if (done < text.size()) emit(text.substr(done), -1);
}

bool AddedTokens::ends_with_word(std::string_view text) const {
  std::size_t end = 0;
  return word_char_->match_at(text, utf8_before(text, text.size()), end);
}

bool AddedTokens::starts_with_word(std::string_view text) const {
  std::size_t end = 0;
  return word_char_->match_at(text, 0, end);
}

std::size_t AddedTokens::trailing_space_start(std::string_view text) const {
  std::size_t start = text.size(), end = 0;
  while (start > 0) {
    const std::size_t before = utf8_before(text, start);
    if (!space_char_->match_at(text, before, end)) break;
    start = before;
  }
  return start;
}

std::size_t AddedTokens::leading_space_end(std::string_view text) const {
  std::size_t at = 0, end = 0;
  while (at < text.size() && space_char_->match_at(text, at, end)) at = end;
  return at;
}

std::int32_t AddedTokens::id_of(const std::string& content) const {
  for (const Token& t : tokens_)
    if (t.content == content) return t.id;
  return -1;
}

std::size_t AddedTokens::max_id() const {
  std::size_t m = 0;
  for (const Token& t : tokens_) m = std::max(m, std::size_t(t.id));
  return m;
}

bool AddedTokens::is_special(std::int32_t id) const {
  const auto it = by_id_.find(id);
  return it != by_id_.end() && tokens_[it->second].special;
}

bool AddedTokens::bytes_of(std::int32_t id, std::string_view& out) const {
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return false;
  out = tokens_[it->second].bytes;
  return true;
}

}  // namespace fsdp
