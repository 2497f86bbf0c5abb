// SPDX-License-Identifier: MIT
// GPT-2's byte-level BPE vocabulary (OpenAI's encoder.json), for turning token ids back into
// text: each token is a string of code points, each code point standing for one byte (the
// printable Latin-1 bytes as themselves, the other 68 bytes as U+0100 onwards).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/vocabulary.hpp"

namespace fsdp {

class Gpt2Vocabulary final : public Vocabulary {
 public:
  // Throws DataError naming the file and the entry that is wrong.
  static Gpt2Vocabulary load(const std::string& encoder_json);
  // The bytes the tokens stand for; an id the vocabulary lacks is written as <|id|>.
  std::string decode(const std::vector<std::int32_t>& tokens) const override;
  std::size_t size() const override { return bytes_.size(); }

 private:
  std::vector<std::string> bytes_;  // by id
};

}  // namespace fsdp
