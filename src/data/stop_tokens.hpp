// SPDX-License-Identifier: MIT
// Where generation ends for a Hugging Face model directory: the tokenizer's EOS, and the
// eos_token_id of generation_config.json and config.json (an id or a list: instruct models list
// the end of a chat turn, Llama 3's <|eot_id|>, beside the end of text).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.hpp"

namespace fsdp {

// The distinct ids, the tokenizer's first; files that are missing or lack the key add nothing.
// DataError naming the file when one is not JSON.
std::vector<std::int32_t> stop_token_ids(const std::string& model_dir, const Tokenizer& tokenizer);

}  // namespace fsdp
