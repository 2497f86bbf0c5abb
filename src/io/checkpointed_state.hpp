// SPDX-License-Identifier: MIT
// What a checkpoint reads and writes, as an interface the sharding engine's state implements
// (fsdp/sharded_state.hpp), so io/ never depends on the engine: this rank's shard of every
// unit's parts' parameters and AdamW moments, which copy of a replicated shard writes, and what
// must be rebuilt after the shards were overwritten.
#pragma once
#include <cstdint>
#include <vector>

#include "core/shard_buffer.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// One part of a unit (fsdp/part_layout.hpp; a unit of one part: the unit) as this rank owns it:
// flat elements [shard_begin, shard_begin + shard) of the padded part whose tensors `layout`
// lists at offsets within it; padding past layout->numel is zero. Parts of one placement share
// their groups: every rank holds the same position in all of them.
struct UnitShard {
  const UnitLayout* layout = nullptr;
  std::int64_t shard_begin = 0, shard = 0;
  ShardVec params, exp_avg, exp_avg_sq;  // in host memory where fsdp.offload put them
  int placement = 0;
  bool writes = true;  // this rank is the copy of the slice that writes it (replicas: the same)
  // train.optimizer = muon: the hidden matrices hold Muon's momentum in exp_avg's place and no
  // second moment (ckpt::stores); sq_shift, per tensor of layout, is how far exp_avg_sq's
  // packing (fsdp/optim/optimizer_layout.hpp) moved an AdamW tensor's slice back (empty: nowhere).
  bool muon = false;
  std::vector<std::int64_t> sq_shift;
};

class CheckpointedState {
 public:
  virtual ~CheckpointedState() = default;
  virtual std::vector<UnitShard> unit_shards() = 0;
  virtual int shard_group_size() const = 0;
  virtual int optimizer_steps() const = 0;
  // After the parameter shards were overwritten (a resume, --init-from): rebuild the full
  // parameters a strategy keeps. Collective.
  virtual void shards_loaded() = 0;
  virtual void set_optimizer_steps(int n) = 0;
};

}  // namespace fsdp
