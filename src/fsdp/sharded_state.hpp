// SPDX-License-Identifier: MIT
// What one rank holds of the model: every unit's flat, padded buffers (sharded_unit.hpp), part
// by part as the run's layout places them (fsdp/part_layout.hpp), initialised the same way on
// every rank, and the optimizer's step count. The step (fsdp/step.cpp), the optimizer (optim/) and checkpoints
// (io/checkpoint.hpp) all read and write this, never each other.
#pragma once
#include <vector>

#include "comm/communicator.hpp"
#include "comm/device_mesh.hpp"
#include "config/run_setup.hpp"
#include "core/memory.hpp"
#include "core/offload_file.hpp"
#include "fsdp/sharded_unit.hpp"
#include "fsdp/strategy.hpp"
#include "io/checkpointed_state.hpp"

namespace fsdp {

class ShardedState : public CheckpointedState {
 public:
  // Allocates and initialises (the architecture's init from `seed`) the units of `layout`, each
  // part for this rank's position in its groups (RunSetup::part_groups).
  // offload: the rank's open offload file under fsdp.offload = nvme (else null), with room
  // for offload_bytes(setup, layout).
  ShardedState(const RunSetup& setup, RunLayout layout, comm::DeviceMesh& mesh,
               MemoryTracker& tracker, std::uint64_t seed, OffloadFile* offload = nullptr);
  // Bytes of one rank's offload file: every unit's moments, and its parameter shard with
  // offload.params, each region whole disk blocks.
  static std::int64_t offload_bytes(const RunSetup& setup, const RunLayout& layout);
  const RunLayout& layout() const { return layout_; }
  OffloadFile* offload_file() { return offload_; }

  const RunSetup& setup() const { return setup_; }
  Strategy strategy() const { return setup_.strategy; }
  int shard_group_size() const override { return shard_.size(); }
  comm::Communicator& shard_comm() { return shard_; }
  comm::Communicator& replicate_comm() { return replicate_; }
  std::vector<ShardedUnit>& units() { return units_; }
  const std::vector<ShardedUnit>& units() const { return units_; }
  std::int64_t padded_params() const;
  std::int64_t largest_unit() const;  // padded elements: the gathered window's unit of account

  // What this rank owns of unit u: its slice of every part, one after the other (a view into the
  // full buffer where the strategy keeps one), its gradient and AdamW's two moments.
  ShardVec param_shard(int u);
  // The trained range of param_shard (all of it but for an adapter run's frozen parts): what the
  // optimizer updates. grad_shard and the moments cover the same range.
  ShardVec train_params(int u);
  ShardVec grad_shard(int u);
  ShardVec exp_avg_shard(int u) { return units_[std::size_t(u)].exp_avg.view(); }
  ShardVec exp_avg_sq_shard(int u) { return units_[std::size_t(u)].exp_avg_sq.view(); }
  // Copies of the full parameters of unit u, gathered, at the offsets of the unit's placed layout
  // (layout().units; a unit of one part: the architecture's), the trailing padding dropped.
  std::vector<float> full_params(int u);
  // After the shards changed (the optimizer, a resume): rebuild the full parameters that zero1
  // and zero2 keep, from every rank's shard. Under bf16 the other ranks' parts travel as bf16.
  void sync_full_params();

  int optimizer_steps() const override { return optimizer_steps_; }
  void set_optimizer_steps(int n) override { optimizer_steps_ = n; }
  // CheckpointedState
  std::vector<UnitShard> unit_shards() override;
  void shards_loaded() override { sync_full_params(); }
  int next_optimizer_step() { return ++optimizer_steps_; }

 private:
  RunSetup setup_;
  RunLayout layout_;  // never resized: the units point into it
  comm::Communicator& shard_;
  comm::Communicator& replicate_;
  MemoryTracker& tracker_;
  OffloadFile* offload_ = nullptr;
  std::vector<ShardedUnit> units_;
  int optimizer_steps_ = 0;
};

}  // namespace fsdp
