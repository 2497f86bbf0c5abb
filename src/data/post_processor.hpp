// SPDX-License-Identifier: MIT
// What the post-processor of a tokenizer.json adds around one encoded text when special tokens
// are asked for: TemplateProcessing's single template (Llama 3.1's "<|begin_of_text|> $A"),
// ByteLevel (nothing: it only trims offsets) and a Sequence of them.
#pragma once
#include <cstdint>
#include <vector>

#include "data/json_at.hpp"

namespace fsdp {

struct SpecialTokenTemplate {
  std::vector<std::int32_t> before, after;
};

// node: tokenizer.json's "post_processor" (null adds nothing). BertProcessing,
// RobertaProcessing and the like are refused by type.
SpecialTokenTemplate special_token_template(const JsonAt& node);

}  // namespace fsdp
