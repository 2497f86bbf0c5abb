// SPDX-License-Identifier: MIT
// What a checkpoint reads and writes, as an interface the sharding engine's state implements
// (fsdp/sharded_state.hpp), so io/ never depends on the engine: this rank's shard of every
// unit's parameters and AdamW moments, which copy of a replicated shard writes, and what must
// be rebuilt after the shards were overwritten.
#pragma once
#include <cstdint>
#include <vector>

#include "core/shard_buffer.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// Unit `layout` as this rank owns it: flat elements [shard_begin, shard_begin + shard) of the
// padded unit; padding past layout->numel is zero.
struct UnitShard {
  const UnitLayout* layout = nullptr;
  std::int64_t shard_begin = 0, shard = 0;
  ShardVec params, exp_avg, exp_avg_sq;  // in host memory where fsdp.offload put them
};

class CheckpointedState {
 public:
  virtual ~CheckpointedState() = default;
  virtual std::vector<UnitShard> unit_shards() = 0;
  // Whether this rank is the one copy of its shard that writes it (replicas hold the same bytes).
  virtual bool writes_shard() const = 0;
  virtual int shard_group_size() const = 0;
  virtual int optimizer_steps() const = 0;
  // After the parameter shards were overwritten (a resume, --init-from): rebuild the full
  // parameters a strategy keeps. Collective.
  virtual void shards_loaded() = 0;
  virtual void set_optimizer_steps(int n) = 0;
};

}  // namespace fsdp
