// SPDX-License-Identifier: MIT
// The added tokens of a tokenizer.json (special tokens such as <|begin_of_text|> and <|im_start|>,
// and plain added ones such as <think>): found in the text before anything else runs, the
// longest leftmost first, with each token's lstrip, rstrip, single_word and normalized flags
// honoured as Hugging Face's AddedVocabulary honours them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/bpe_model.hpp"
#include "data/callback.hpp"
#include "data/json_at.hpp"
#include "data/normalizer.hpp"
#include "data/regex.hpp"

namespace fsdp {

class AddedTokens {
 public:
  // list: tokenizer.json's "added_tokens". A token's id must be the one Hugging Face gives it
  // (its vocabulary id, else the next free one in order); a file that disagrees is refused.
  static AddedTokens from_json(const JsonAt& list, const BpeModel& model,
                               const Normalizer& normalizer);

  // Splits text at the tokens matched on raw text (normalized = false) or, with normalized,
  // at those matched on normalized text: emit(piece, -1) for text between them, emit(token
  // text, id) for a token. Nothing is emitted for empty text. Not thread-safe.
  void split(std::string_view text, bool normalized,
             Callback<std::string_view, std::int32_t> emit) const;

  // The id of the token with this content, or -1.
  std::int32_t id_of(const std::string& content) const;
  bool is_special(std::int32_t id) const;
  // The highest id among the added tokens (0 when there are none).
  std::size_t max_id() const;
  // The bytes an added token decodes to; false when id is not an added token.
  bool bytes_of(std::int32_t id, std::string_view& out) const;

 private:
  struct Token {
    std::string content;
    std::int32_t id;
    bool special, lstrip, rstrip, single_word, normalized;
    std::string bytes;  // what decoding gives
  };
  // The tokens matched on one kind of text: one alternation of their literals, longest first,
  // and each matched string's token.
  struct MatchSet {
    std::unique_ptr<Regex> regex;
    std::unordered_map<std::string, std::size_t> by_text;
  };
  void build_set(bool normalized, const Normalizer& normalizer, const std::string& where,
                 MatchSet& set);
  bool ends_with_word(std::string_view text) const;
  bool starts_with_word(std::string_view text) const;
  std::size_t trailing_space_start(std::string_view text) const;
  std::size_t leading_space_end(std::string_view text) const;

  std::vector<Token> tokens_;
  std::unordered_map<std::int32_t, std::size_t> by_id_;
  MatchSet raw_, normalized_;
  // Rust regex's \w and \s, which Hugging Face uses for single_word, lstrip and rstrip.
  std::unique_ptr<Regex> word_char_, space_char_;
};

}  // namespace fsdp
