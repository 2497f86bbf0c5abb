// SPDX-License-Identifier: MIT
// A checkpoint's copy of this rank's state: the shards of every unit's parameters and AdamW
// moments copied into host buffers (pinned on a GPU build, made at the first save and reused,
// counted as MemCategory::CheckpointStaging), with what the file records of the live state.
// The background writer (io/async_checkpointer.hpp) writes a file from it exactly as a
// synchronous save writes from the live state, while training changes the live shards.
#pragma once
#include <vector>

#include "core/memory.hpp"
#include "core/shard_buffer.hpp"
#include "io/checkpointed_state.hpp"

namespace fsdp {

class StagedState final : public CheckpointedState {
 public:
  explicit StagedState(MemoryTracker& tracker) : tracker_(tracker) {}

  // Makes the buffers for `live`'s shards and touches every page, so the first save costs a
  // copy and not the page faults of fresh memory (done by stage() when not done before).
  void allocate(CheckpointedState& live);
  // Copies what a checkpoint of `live` writes. A rank that is not its shard's writer (a
  // replica) keeps no copy: it only takes part in the file's collectives.
  void stage(CheckpointedState& live);
  // Bytes of host memory the copies hold.
  std::int64_t bytes() const;

  std::vector<UnitShard> unit_shards() override;
  int shard_group_size() const override { return shard_group_size_; }
  int optimizer_steps() const override { return optimizer_steps_; }
  // A staged copy is only ever written, never read into.
  void shards_loaded() override {}
  void set_optimizer_steps(int) override {}

 private:
  struct Unit {
    UnitShard meta;  // layout and shard range; the views below replace the live ones
    ShardBuffer params, exp_avg, exp_avg_sq;
  };
  MemoryTracker& tracker_;
  std::vector<Unit> units_;
  int shard_group_size_ = 1, optimizer_steps_ = 0;
};

}  // namespace fsdp
