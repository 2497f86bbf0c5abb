// SPDX-License-Identifier: MIT
#include "prepare/eos_token.hpp"

namespace fsdp::prepare {

std::int32_t resolve_eos(const Tokenizer& tok, const std::string& eos) {
  if (eos.empty()) {
    if (tok.eos_id() < 0)
      throw DataError("--eos: the tokenizer has no eos_token (tokenizer_config.json): name one");
    return tok.eos_id();
  }
  // A token's text first: "128001" could in principle be a token of its own.
  if (const std::int32_t id = tok.token_id(eos); id >= 0) return id;
  if (eos.find_first_not_of("0123456789") == std::string::npos && eos.size() <= 10) {
    const long long id = std::stoll(eos);
    if (id < std::int64_t(tok.vocab_size())) return std::int32_t(id);
    throw DataError("--eos: id " + eos + " is past the vocabulary of " +
                    std::to_string(tok.vocab_size()));
  }
  throw DataError("--eos: '" + eos + "' is not a token of this tokenizer");
}

}  // namespace fsdp::prepare
