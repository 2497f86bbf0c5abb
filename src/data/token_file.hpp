// SPDX-License-Identifier: MIT
// A whole token file in host memory: llm.c .bin (GPT-2's uint16 files, magic 20240520, and
// the Llama 3 branch's uint32 files, magic 20240801 version 7), raw uint16 (nanoGPT) or uint32
// tokens (vocabularies over 65,535: Llama 3 has 128,256), or bytes of text, plus the embedded
// corpus under "builtin:train" / "builtin:val". Every token is range-checked once; a bad one
// is named by its index and byte offset.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/data_error.hpp"

namespace fsdp {

class TokenFile {
 public:
  // format: llmc | uint16 | uint32 | text (ignored for builtin: paths, which are always text).
  // Throws DataError if the file is missing, malformed, holds a token >= vocab_size, or has
  // fewer than block_size + 1 tokens.
  static TokenFile load(const std::string& path, const std::string& format, int vocab_size,
                        int block_size);
  // Same checks on tokens already in memory; `name` stands in for the path in messages.
  static TokenFile from_tokens(std::string name, std::vector<std::int32_t> tokens, int vocab_size,
                               int block_size);

  const std::string& name() const { return name_; }
  std::int64_t size() const { return static_cast<std::int64_t>(tokens_.size()); }
  const std::int32_t* data() const { return tokens_.data(); }
  const std::vector<std::int32_t>& tokens() const { return tokens_; }
  int vocab_size() const { return vocab_size_; }

 private:
  TokenFile(std::string name, std::vector<std::int32_t> tokens, int vocab_size, int block_size,
            std::int64_t header_bytes, int width);

  std::string name_;
  std::vector<std::int32_t> tokens_;
  int vocab_size_ = 0;
};

}  // namespace fsdp
