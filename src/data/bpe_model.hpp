// SPDX-License-Identifier: MIT
// The BPE model of a byte-level tokenizer.json (GPT-2, Llama 3, Qwen2/3, SmolLM2): the vocabulary
// as raw bytes, the merges as ranked id pairs, and the merge loop with a cache of words already
// merged. Words are the raw bytes a pre-tokenizer produced: the byte-level alphabet is only the
// file's spelling of them.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/bytes_table.hpp"
#include "data/json_at.hpp"
#include "data/merge_table.hpp"

namespace fsdp {

class BpeModel {
 public:
  // model: tokenizer.json's "model". Anything but a byte-level BPE (Unigram, WordPiece,
  // WordLevel, a BPE with byte fallback or with dropout) is refused naming the key.
  static BpeModel from_json(const JsonAt& model);

  // Appends the ids of one word to out. Not thread-safe (the cache): one model per thread.
  void encode_word(std::string_view word, std::vector<std::int32_t>& out) const;
  // The id of the token spelled `bytes`, or -1.
  std::int32_t id_of_bytes(std::string_view bytes) const;
  // The bytes id decodes to (what the byte-level decoder makes of its string); false when the
  // vocabulary has no such id.
  bool bytes_of(std::int32_t id, std::string_view& out) const;
  // One past the highest id.
  std::size_t size() const { return bytes_by_id_.size(); }
  // How many tokens the vocabulary has (Hugging Face numbers added tokens from here).
  std::size_t entries() const { return entries_; }

  // Words merged since the cache was last emptied (the benchmark reports it), and emptying it
  // (a benchmark run then starts as cold as the first).
  std::size_t cached_words() const { return cache_.size(); }
  void clear_cache() const { cache_.clear(); }

 private:
  void merge(std::string_view word, std::vector<std::int32_t>& out) const;

  BytesTable vocab_;                         // bytes -> id
  std::array<std::int32_t, 256> byte_id_{};  // the token of each single byte
  MergeTable merges_;
  bool ignore_merges_ = false;            // a word that is a token is that token (Llama 3)
  std::vector<std::string> bytes_by_id_;  // what each id decodes to
  std::vector<bool> known_;               // whether the vocabulary has the id
  std::size_t entries_ = 0;

  // The merge loop's state, reused from word to word.
  struct Symbol {
    std::int32_t id, prev, next;
    bool alive;
  };
  struct Candidate {
    std::uint32_t rank;
    std::int32_t pos, id;
  };
  mutable BytesTable cache_;
  mutable std::vector<Symbol> symbols_;
  mutable std::vector<Candidate> heap_;
  mutable std::vector<std::int32_t> ids_;
};

}  // namespace fsdp
