// SPDX-License-Identifier: MIT
// The planner's memory for fsdp.mixed_precision = bf16 as it would run with bf16 kernels on a
// GPU: bf16 gathered parameters, working copies and activations, the fp32 shard as AdamW's
// master (plan/memory_model.hpp, ElementBytes). The engine does not allocate that yet: it keeps
// float activations and widens bf16 parameters for float GEMMs (README, "Memory features"), and
// its counted run (plan/counted_step.hpp) measures exactly that. Until the engine's bf16 step
// runs bf16 kernels (issue 66), this walks its buffers through the step's schedule (the gather
// window, the reduction pipeline, deterministic mode's tree) in the engine's order and folds
// them into the tracker's peaks. It allocates; it times nothing: the timeline reads the engine's
// own log in every precision (plan/time_model.hpp).
#pragma once
#include <array>
#include <cstdint>

#include "plan/memory_model.hpp"

namespace fsdp::plan {

struct TrackerPeaks {
  std::array<std::array<std::int64_t, kNumMemCategories>, 2> peak{};  // [space][category]
  std::array<std::int64_t, 2> total{};                                // [space]
};

// One training step of rank `rank` (deterministic mode's buffers depend on which micro-batches
// a rank holds; nothing else does), after construction. max_micro_batches > 0: at most that
// many (the first reduces straight into the gradient shards, from the third on each repeats the
// previous one's allocations, so three give the peaks of any number).
TrackerPeaks gpu_bf16_peaks(const Setup& s, int max_micro_batches, int rank);

}  // namespace fsdp::plan
