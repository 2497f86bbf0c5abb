// SPDX-License-Identifier: MIT
// The id that ends each document: tokenizer_config.json's eos_token, or the token --eos names.
#pragma once
#include <cstdint>
#include <string>

#include "data/data_error.hpp"
#include "data/tokenizer.hpp"

namespace fsdp::prepare {

// `eos` is a token's text ("<|endoftext|>", or a vocabulary token in its byte-level spelling)
// or a decimal id; "" means the tokenizer's eos. Throws DataError with one line saying why
// there is none (no such token, an id past the vocabulary, no eos_token and no --eos).
std::int32_t resolve_eos(const Tokenizer& tok, const std::string& eos);

}  // namespace fsdp::prepare
