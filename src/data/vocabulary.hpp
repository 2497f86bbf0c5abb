// SPDX-License-Identifier: MIT
// A tokenizer's vocabulary, for turning token ids back into text (fsdp-sample --encoder).
// Which file formats it reads is the tokenizer's business (a byte-level BPE's encoder.json today).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fsdp {

class Vocabulary {
 public:
  virtual ~Vocabulary() = default;
  // The bytes the tokens stand for; an id the vocabulary lacks is written as <|id|>.
  virtual std::string decode(const std::vector<std::int32_t>& tokens) const = 0;
  virtual std::size_t size() const = 0;
};

// The vocabulary in `path`; throws DataError naming the file and the entry that is wrong.
std::unique_ptr<Vocabulary> load_vocabulary(const std::string& path);

}  // namespace fsdp
