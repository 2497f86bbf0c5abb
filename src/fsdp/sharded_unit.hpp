// SPDX-License-Identifier: MIT
// One sharding unit's buffers on one rank. The unit's flat parameters are padded to a multiple
// of the shard-group size S; the rank at position r in its shard group owns elements
// [r * shard, (r + 1) * shard). Which buffers exist depends on the strategy (strategy.hpp).
#pragma once
#include <cstdint>

#include "comm/communicator.hpp"
#include "core/memory.hpp"
#include "core/shard_buffer.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

struct ShardedUnit {
  const UnitLayout* layout = nullptr;
  std::int64_t numel = 0;        // real parameters
  std::int64_t padded = 0;       // numel rounded up to a multiple of the shard-group size
  std::int64_t shard = 0;        // padded / shard-group size (= padded without sharding)
  std::int64_t shard_begin = 0;  // first flat element this rank owns

  // In host memory where fsdp.offload puts them (core/shard_buffer.hpp): the moments with any
  // offload, the parameter and gradient shards with offload = params.
  ShardBuffer params;        // persistent: the full buffer, or the shard (zero3, hybrid)
  TrackedBuffer gathered;    // zero3/hybrid: the transient full parameters
  TrackedBuffer grad_full;   // full gradients: persistent (ddp, zero1) or transient
  ShardBuffer grad_shard;    // zero2/zero3/hybrid: the reduced gradient shard
  ShardBuffer exp_avg, exp_avg_sq;

  comm::Handle gather;  // the in-flight all-gather into `gathered`
  HostBuffer upload;    // offload = params under bf16: the shard's cast, until the gather lands
  bool gather_in_flight = false;
};

}  // namespace fsdp
