// SPDX-License-Identifier: MIT
// Which tokens of a token file are trained: the file FILE.trained beside FILE.bin, written by
// fsdp-data (prompt/completion and chat data) and read by training and evaluation. Bit i says
// whether token i, when it is a target (predicted from token i - 1), is scored. A token file
// without one trains every token.
//
// Format (little-endian): a 1024-byte header of int32 words, [0] magic 20261204, [1] version 1,
// [2..3] the token count as an int64, [4..5] the trained count as an int64, [6] the id that ends each document (the
// EOS fsdp-data appended; -1 when unknown), [7..8] the pair id (below; 0 in older masks), the rest zero; then
// ceil(tokens / 8) bytes, token i at bit i % 8 (least significant first) of byte i / 8. Bits
// past the last token are zero.
//
// The pair id ties a mask to its token file: fsdp-data writes the same nonzero 64-bit value into
// the token file's llm.c header (int32 words [3..4], which llm.c's readers ignore) and here. It
// is a hash of the tokens and their bits, so the same data gives the same bytes at any number of
// ranks. load() refuses a mask whose id is not the token file's: the pair of an interrupted
// prepare (the new mask is renamed in before the new token file) or of two different runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/data_error.hpp"

namespace fsdp {

class TrainedMask {
 public:
  static constexpr std::int32_t kMagic = 20261204;
  TrainedMask() = default;
  explicit TrainedMask(std::int64_t tokens) : tokens_(tokens), bits_((tokens + 7) / 8, 0) {}

  // The mask file of a token file: "<token file>.trained".
  static std::string path_for(const std::string& token_file) { return token_file + ".trained"; }
  // Reads `path`; DataError naming the file when it is malformed, its count differs from
  // expected_tokens (>= 0), its trained count disagrees with its bits, or it carries a pair id
  // and the token file beside it (`path` less ".trained") does not carry the same.
  static TrainedMask load(const std::string& path, std::int64_t expected_tokens = -1);
  // Writes the whole file (callers write to a temporary name and rename).
  void save(const std::string& path) const;

  std::int64_t size() const { return tokens_; }
  bool trained(std::int64_t i) const { return (bits_[std::size_t(i >> 3)] >> (i & 7)) & 1; }
  void set(std::int64_t i, bool on) {
    auto& b = bits_[std::size_t(i >> 3)];
    b = static_cast<std::uint8_t>(on ? b | (1u << (i & 7)) : b & ~(1u << (i & 7)));
  }
  // Appends n tokens, all trained or all not (how a document's parts are added in order).
  void append(std::int64_t n, bool on);
  std::int64_t trained_count() const;
  std::int32_t eos_id() const { return eos_id_; }
  void set_eos_id(std::int32_t id) { eos_id_ = id; }
  std::uint64_t pair_id() const { return pair_id_; }
  void set_pair_id(std::uint64_t id) { pair_id_ = id; }
  const std::vector<std::uint8_t>& bytes() const { return bits_; }

 private:
  std::int64_t tokens_ = 0;
  std::int32_t eos_id_ = -1;
  std::uint64_t pair_id_ = 0;
  std::vector<std::uint8_t> bits_;
};

}  // namespace fsdp
