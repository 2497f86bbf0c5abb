// SPDX-License-Identifier: MIT
// What the post-processor of a tokenizer.json adds around one encoded text when special tokens
// are asked for: TemplateProcessing's single template (Llama 3.1's "<|begin_of_text|> $A"),
// ByteLevel (nothing: it only trims offsets) and a Sequence of them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/json_at.hpp"

namespace fsdp {

struct SpecialTokenTemplate {
  std::vector<std::int32_t> before, after;
};

// node: tokenizer.json's "post_processor" (null adds nothing). BertProcessing,
// RobertaProcessing and the like are refused by type. vocab > 0: an id at or past it is refused
// naming its key (a BOS or EOS the model has no embedding for).
SpecialTokenTemplate special_token_template(const JsonAt& node, std::size_t vocab = 0);

}  // namespace fsdp
