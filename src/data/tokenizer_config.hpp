// SPDX-License-Identifier: MIT
// What fsdp reads from a Hugging Face tokenizer_config.json: the BOS and EOS tokens' text, and
// add_bos_token where the file sets it (transformers then puts BOS before each text, or not,
// whatever the post-processor's template says).
#pragma once
#include <optional>
#include <string>

namespace fsdp {

struct TokenizerConfig {
  std::string bos_token, eos_token;  // "" when the file has none
  std::optional<bool> add_bos_token;
};

// The file at path; a missing file gives an empty config. DataError naming the file and key
// when it is not JSON or a key has the wrong type.
TokenizerConfig read_tokenizer_config(const std::string& path);

}  // namespace fsdp
