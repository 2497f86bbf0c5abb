// SPDX-License-Identifier: MIT
// Counter-based sampling: no generator state to advance or checkpoint, only (seed, step).
#include "data/sampler.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "data/hash.hpp"

namespace fsdp {

Sampler::Sampler(const TokenFile& tokens, int block_size, std::uint64_t seed, SamplerOptions o)
    : tokens_(&tokens), block_size_(block_size), seed_(seed), o_(std::move(o)) {
  if (o_.mask && o_.mask->size() != tokens.size())
    throw DataError(TrainedMask::path_for(tokens.name()) + ": masks " +
                    std::to_string(o_.mask->size()) + " tokens but " + tokens.name() + " holds " +
                    std::to_string(tokens.size()));
  if (block_size <= 0)
    throw DataError(tokens.name() + ": block_size must be positive, got " +
                    std::to_string(block_size));
  if (tokens.size() < std::int64_t(block_size) + 1)
    throw DataError(tokens.name() + ": holds " + std::to_string(tokens.size()) +
                    " tokens; block_size " + std::to_string(block_size) + " needs at least " +
                    std::to_string(block_size + 1));
}

std::int64_t Sampler::sample_offset(std::int64_t step, std::int64_t index) const {
  // Chained mixing, so (step, index) and (index, step) land on unrelated windows.
  std::uint64_t h = mix64(seed_);
  h = mix64(h ^ static_cast<std::uint64_t>(step));
  h = mix64(h ^ static_cast<std::uint64_t>(index));
  const auto starts = static_cast<std::uint64_t>(tokens_->size() - block_size_);
  return static_cast<std::int64_t>(h % starts);
}

void Sampler::copy_window(std::int64_t offset, std::int32_t* inputs, std::int32_t* targets,
                          std::int32_t* doc_starts) const {
  const std::int32_t* src = tokens_->data() + offset;
  std::copy(src, src + block_size_, inputs);
  std::copy(src + 1, src + block_size_ + 1, targets);
  if (scores_tokens())
    for (int t = 0; t < block_size_; ++t)
      if (!scored(offset + t)) targets[t] = -1;
  if (!doc_starts) return;
  std::int32_t start = 0;
  for (int t = 0; t < block_size_; ++t) {
    if (o_.documents && t > 0 && inputs[t - 1] == o_.eos_id) start = t;
    doc_starts[t] = start;
  }
}

std::int64_t Sampler::count_scored(std::int64_t offset) const {
  if (!scores_tokens()) return block_size_;
  std::int64_t n = 0;
  for (int t = 0; t < block_size_; ++t) n += scored(offset + t);
  return n;
}

void Sampler::fill(std::int64_t step, std::int64_t first_index, int count, std::int32_t* inputs,
                   std::int32_t* targets, std::int32_t* doc_starts) const {
  const std::int64_t T = block_size_;
  for (int k = 0; k < count; ++k)
    copy_window(sample_offset(step, first_index + k), inputs + k * T, targets + k * T,
                doc_starts ? doc_starts + k * T : nullptr);
}

std::int64_t Sampler::scored_targets(std::int64_t step, std::int64_t first_index,
                                     std::int64_t count) const {
  std::int64_t n = 0;
  for (std::int64_t k = 0; k < count; ++k) n += count_scored(sample_offset(step, first_index + k));
  return n;
}

std::int64_t Sampler::eval_scored_targets(std::int64_t i) const {
  return count_scored(i * (std::int64_t(block_size_) + 1));
}

std::int64_t Sampler::num_eval_windows() const {
  return tokens_->size() / (std::int64_t(block_size_) + 1);
}

void Sampler::eval_window(std::int64_t i, std::int32_t* inputs, std::int32_t* targets,
                          std::int32_t* doc_starts) const {
  if (i < 0 || i >= num_eval_windows())
    throw std::out_of_range(tokens_->name() + ": eval window " + std::to_string(i) +
                            " is outside [0, " + std::to_string(num_eval_windows()) + ")");
  copy_window(i * (std::int64_t(block_size_) + 1), inputs, targets, doc_starts);
}

}  // namespace fsdp
