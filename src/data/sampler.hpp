// SPDX-License-Identifier: MIT
// Which sequences make up training step s: window starts are a hash of (seed, step, global
// index), so the global batch is the same for any number of ranks and any step can be replayed
// after a restart. Rank r with per-rank batch b takes global indices [r*b, (r+1)*b).
#pragma once
#include <cstdint>
#include <memory>

#include "data/token_file.hpp"
#include "data/trained_mask.hpp"

namespace fsdp {

// Which targets of a window are scored and where its documents start (docs/data.md).
struct SamplerOptions {
  // data.packing = documents: a document starts at the window's first token and after each
  // eos_id; the target whose input is eos_id (the next document's first token) is not scored.
  bool documents = false;
  std::int32_t eos_id = -1;
  // fsdp-data's trained-token mask of the file (null: every token is trained).
  std::shared_ptr<const TrainedMask> mask;
};

class Sampler {
 public:
  // Keeps a pointer to `tokens`, which must outlive the sampler. Throws DataError if the file
  // holds fewer than block_size + 1 tokens, or the mask does not cover the file.
  Sampler(const TokenFile& tokens, int block_size, std::uint64_t seed, SamplerOptions o = {});

  // Whether some targets may go unscored or windows hold several documents: the trainer then
  // weights tokens (TokenLayout) rather than averaging each micro-batch.
  bool scores_tokens() const { return o_.documents || o_.mask != nullptr; }
  bool documents() const { return o_.documents; }

  // Start of the block_size + 1 token window for one sequence of one step's global batch.
  std::int64_t sample_offset(std::int64_t step, std::int64_t index_in_global_batch) const;

  // count sequences, global indices [first_index, first_index + count):
  // inputs, targets are row-major (count, T); targets are the inputs shifted by one token, -1
  // where not scored. doc_starts (documents only; may be null): each token's document start.
  void fill(std::int64_t step, std::int64_t first_index, int count, std::int32_t* inputs,
            std::int32_t* targets, std::int32_t* doc_starts = nullptr) const;
  // Scored targets of those sequences (count * T without masks or documents).
  std::int64_t scored_targets(std::int64_t step, std::int64_t first_index, std::int64_t count) const;

  // Validation covers the file in order without overlap: window i is tokens
  // [i*(T+1), (i+1)*(T+1)); inputs are its first T tokens, targets its last T.
  void eval_window(std::int64_t i, std::int32_t* inputs, std::int32_t* targets,
                   std::int32_t* doc_starts = nullptr) const;
  std::int64_t eval_scored_targets(std::int64_t i) const;
  std::int64_t num_eval_windows() const;

  int block_size() const { return block_size_; }
  std::uint64_t seed() const { return seed_; }

 private:
  void copy_window(std::int64_t offset, std::int32_t* inputs, std::int32_t* targets,
                   std::int32_t* doc_starts) const;
  // Whether the target at file position i + 1 (input at i) is scored.
  bool scored(std::int64_t i) const {
    return !(o_.mask && !o_.mask->trained(i + 1)) &&
           !(o_.documents && tokens_->data()[i] == o_.eos_id);
  }
  std::int64_t count_scored(std::int64_t offset) const;

  const TokenFile* tokens_;
  int block_size_;
  std::uint64_t seed_;
  SamplerOptions o_;
};

}  // namespace fsdp
