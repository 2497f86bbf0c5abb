// SPDX-License-Identifier: MIT
// The optimizer half of the step on a sharded state: the global gradient norm (each rank's
// shard norms summed in rank order over each placement's shard group), the non-finite check
// naming the first bad unit, clipping, and the update through the state's tier
// (fsdp/optim/state_tier.hpp): AdamW (fsdp/optim/adamw.hpp) on every tensor, or under train.optimizer =
// muon Muon (fsdp/optim/muon.hpp, fsdp/optim/muon_exchange.hpp) on the hidden matrices and AdamW on the rest.
#pragma once
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "config/run_config.hpp"
#include "core/host_buffer.hpp"
#include "core/offload_file.hpp"
#include "fsdp/optim/muon_exchange.hpp"
#include "fsdp/sharded_state.hpp"
#include "fsdp/optim/state_tier.hpp"
#include "fsdp/optim/adamw.hpp"

namespace fsdp {

// fsdp.offload = nvme: the pieces the optimizer streams each shard in (kStreamPiece elements,
// core/offload_file.hpp, or the largest shard if smaller).
std::int64_t stream_piece(const std::vector<ShardedUnit>& units);
// The largest unit's shard: what a staging buffer holds.
std::int64_t largest_shard(const std::vector<ShardedUnit>& units);

// Non-finite loss or gradient norm under train.on_nonfinite = abort (every rank throws it).
struct NonFiniteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct OptimizerResult {
  double grad_norm = 0.0;  // before clipping
  double lr = 0.0;
  bool skipped = false;        // non-finite and train.on_nonfinite = skip_step
  std::string nonfinite_unit;  // the first unit whose gradients are not finite, if any
};

class ShardedOptimizer {
 public:
  ShardedOptimizer(ShardedState& state, const TrainConfig& train, MemoryTracker& tracker);
  ~ShardedOptimizer();

  // nvme: posts the disk reads of the first pieces' state (the moments, and the parameter
  // shards on disk: nothing the backward pass changes) so they overlap the end of the step
  // rather than delay the optimizer; a no-op otherwise, or for a set still being written.
  void prefetch_state() { tier_->prefetch(); }

  // The squared global gradient norm: per-shard sums of squares, all-reduced.
  double norm2();
  // Clips by the norm sqrt(norm2) and steps every unit's shard, calling updated(u) after unit
  // u (the next step's first all-gathers start there). zero_full_grads: the update also zeroes
  // the persistent full gradients it reads (ddp, zero1). Throws NonFiniteError, or skips the
  // update, when the loss or the norm is not finite.
  OptimizerResult step(int step, double norm2, double loss, bool zero_full_grads,
                       const std::function<void(int)>& updated);
  // train.optimizer = muon: this rank's Newton-Schulz FLOPs per step (0 otherwise).
  double muon_flops() const { return muon_ ? muon_->flops() : 0.0; }

 private:
  std::string first_nonfinite_unit();
  std::string first_nonfinite_tensor(int u);  // " (tensor NAME)", or "" when none
  std::vector<comm::Communicator*> placement_comms();  // by placement (null: none uses it)

  ShardedState& state_;
  const TrainConfig& train_;
  std::unique_ptr<StateTier> tier_;     // where the state lives (fsdp/optim/state_tier.hpp)
  std::unique_ptr<MuonExchange> muon_;  // train.optimizer = muon
  bool counted_ = false;  // a counting tracker: the tiers move their buffers, no rule computes
  StepLog* log_ = nullptr;  // its log, where each piece the rule would update is recorded
  // Runs rule over the tier, or (counted_) the tier's movements around a rule that computes nothing.
  void sweep(UpdateRule& rule, bool zero_grads, const std::function<void(int)>& updated);
};

}  // namespace fsdp
