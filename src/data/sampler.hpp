// SPDX-License-Identifier: MIT
// Which sequences make up training step s: window starts are a hash of (seed, step, global
// index), so the global batch is the same for any number of ranks and any step can be replayed
// after a restart. Rank r with per-rank batch b takes global indices [r*b, (r+1)*b).
#pragma once
#include <cstdint>

#include "data/token_file.hpp"

namespace fsdp {

class Sampler {
 public:
  // Keeps a pointer to `tokens`, which must outlive the sampler. Throws DataError if the file
  // holds fewer than block_size + 1 tokens.
  Sampler(const TokenFile& tokens, int block_size, std::uint64_t seed);

  // Start of the block_size + 1 token window for one sequence of one step's global batch.
  std::int64_t sample_offset(std::int64_t step, std::int64_t index_in_global_batch) const;

  // count sequences, global indices [first_index, first_index + count):
  // inputs, targets are row-major (count, T); targets are the inputs shifted by one token.
  void fill(std::int64_t step, std::int64_t first_index, int count, std::int32_t* inputs,
            std::int32_t* targets) const;

  // Validation covers the file in order without overlap: window i is tokens
  // [i*(T+1), (i+1)*(T+1)); inputs are its first T tokens, targets its last T.
  void eval_window(std::int64_t i, std::int32_t* inputs, std::int32_t* targets) const;
  std::int64_t num_eval_windows() const;

  int block_size() const { return block_size_; }
  std::uint64_t seed() const { return seed_; }

 private:
  void copy_window(std::int64_t offset, std::int32_t* inputs, std::int32_t* targets) const;

  const TokenFile* tokens_;
  int block_size_;
  std::uint64_t seed_;
};

}  // namespace fsdp
