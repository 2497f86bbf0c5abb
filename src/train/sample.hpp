// SPDX-License-Identifier: MIT
// Text generation from the model the engine holds (fsdp-sample, eval.sample_tokens): one token
// at a time, each from a forward pass over the last block_size tokens, on every rank of the
// engine (sharded units are gathered as in evaluation). Rank 0 draws; every rank returns the
// same tokens.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fsdp/engine.hpp"

namespace fsdp {

struct SampleOptions {
  int tokens = 64;           // new tokens to generate
  double temperature = 1.0;  // 0 = greedy (argmax, the lowest id on a tie)
  int top_k = 0;             // 0 = the whole vocabulary
  std::uint64_t seed = 1337;
  // Generation ends after any of these (a tokenizer's EOS, a chat turn's end), kept as the last
  // token.
  std::vector<std::int32_t> stop_ids;
};

// The prompt followed by o.tokens generated tokens (fewer when one of o.stop_ids ends it). The prompt must be non-empty and hold ids
// below vocab_size. Collective over `world` (the engine's ranks).
std::vector<std::int32_t> sample(Engine& engine, comm::Communicator& world, std::vector<std::int32_t> prompt,
                                 const SampleOptions& o);

// The next token from one row of logits: greedy at temperature 0, else softmax(logits / T)
// over the top_k largest, drawn with u in [0, 1).
std::int32_t pick_token(const std::vector<float>& logits, double temperature, int top_k, double u);

// Byte-level vocabularies (256) as text, with bytes that are not printable ASCII or \n
// escaped (\xNN); one_line also escapes \n, for a log line.
std::string bytes_as_text(const std::vector<std::int32_t>& tokens, bool one_line);

}  // namespace fsdp
