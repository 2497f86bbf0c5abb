// SPDX-License-Identifier: MIT
// The normalizer of a tokenizer.json: none, one Unicode normalization form (NFC for Qwen2/3,
// NFD, NFKC, NFKD), or a Sequence of them, computed by utf8proc. Other normalizers (lowercasing,
// replacing, prepending, stripping) are refused by type.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "data/json_at.hpp"

namespace fsdp {

class Normalizer {
 public:
  // node: tokenizer.json's "normalizer" (null for none).
  static Normalizer from_json(const JsonAt& node);
  bool active() const { return !forms_.empty(); }
  // text normalized: a view of text itself when nothing changes it, else of scratch.
  std::string_view apply(std::string_view text, std::string& scratch) const;

 private:
  std::vector<int> forms_;  // utf8proc option sets, applied in order
};

}  // namespace fsdp
