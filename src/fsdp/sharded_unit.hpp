// SPDX-License-Identifier: MIT
// One sharding unit's buffers on one rank. The unit is one or more parts (fsdp/part_layout.hpp)
// one after the other in its flat buffers, each padded to a multiple of its own shard group's
// size S_p; the rank at position r in that group owns part elements [r * shard_p, (r + 1) *
// shard_p), kept one part after the other in the rank's shard buffers. Which buffers exist
// depends on the strategy (strategy.hpp).
#pragma once
#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "core/memory.hpp"
#include "core/shard_buffer.hpp"
#include "fsdp/optim/optimizer_layout.hpp"
#include "fsdp/part_layout.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// One part of a unit as this rank holds it.
struct PartShard {
  UnitPart part;                     // its place in the unit's flat buffer, its groups' sizes
  const UnitLayout* layout = nullptr;  // its tensors, at offsets within the part
  std::int64_t shard = 0;            // part.shard(): what this rank owns of it
  std::int64_t shard_begin = 0;      // first element of the (whole) part this rank owns
  int position = 0;                  // the piece that is (PartRank::position): shard_begin / shard
  std::int64_t shard_offset = 0;     // where that slice sits in the unit's shard buffers
  // The gather and reduction group (a divided part: its slice's), the copies of the shard, and
  // the ranks that hold the whole part once between them (sums over the part: the norm).
  comm::Communicator* shard_comm = nullptr;
  comm::Communicator* replicate_comm = nullptr;
  comm::Communicator* store_comm = nullptr;
  comm::Handle gather;  // the in-flight all-gather into its region of `gathered`
  // Elements [begin, begin + shard) of the unit's whole buffer (RunLayout::stored): this
  // rank's slice.
  std::int64_t flat_begin() const { return part.store + shard_begin; }
  // Where this rank's shard lands in the part's region of the flat (gathered) buffer.
  std::int64_t gather_at() const { return part.base + std::int64_t(shard_comm->rank()) * shard; }
  bool writes() const { return replicate_comm->rank() == 0; }  // the copy a checkpoint writes
};

struct ShardedUnit {
  const UnitLayout* layout = nullptr;  // every tensor at its offset in the flat buffer
  const UnitLayout* stored = nullptr;  // ... and in the whole buffer (differs for divided parts)
  std::vector<PartShard> parts;
  std::int64_t numel = 0;        // real parameters
  std::int64_t padded = 0;       // the flat buffer: every part, padded (a divided one's slice)
  std::int64_t whole = 0;        // the whole buffer: every part entire
  std::int64_t shard = 0;        // this rank's slices of every part (= padded without sharding)
  // The first flat element this rank owns where that is one range: a unit of one part, or a
  // strategy that does not shard (the whole buffer). 0 otherwise.
  std::int64_t shard_begin = 0;
  // What is trained (fsdp/part_layout.hpp: a unit's frozen parts come first): the gradient
  // buffers and the optimizer state cover the parts from the first trained one on. A unit all of
  // whose tensors are trained: grad_base 0, train_offset 0, train_shard = shard, grad_begin =
  // shard_begin.
  std::int64_t grad_base = 0;     // the first flat element grad_full holds
  std::int64_t train_offset = 0;  // the first element of the shard buffers that is trained
  std::int64_t train_shard = 0;   // trained elements of the shard (the gradient shard's length)
  std::int64_t grad_begin = 0;    // ddp, zero1: where this rank's trained shard is in grad_full
  bool trains() const { return train_shard > 0; }
  std::int64_t grad_numel() const { return padded - grad_base; }
  // Element i of the rank's shard buffers as an element of the unit's whole buffer.
  std::int64_t flat_of(std::int64_t i) const {
    for (const PartShard& p : parts)
      if (i < p.shard_offset + p.shard) return p.flat_begin() + (i - p.shard_offset);
    return shard_begin + i;
  }

  // In host memory where fsdp.offload puts them (core/shard_buffer.hpp): the moments with any
  // offload, the parameter and gradient shards with offload = params.
  ShardBuffer params;        // persistent: the full buffer, or the shard (zero3, hybrid)
  TrackedBuffer gathered;    // zero3/hybrid: the transient full parameters
  TrackedBuffer grad_full;   // full gradients (from grad_base): persistent (ddp, zero1) or transient
  ShardBuffer grad_shard;    // zero2/zero3/hybrid: the reduced gradient shard (trained parts)
  // AdamW's moments (trained parts); under Muon exp_avg holds the matrices' momentum and exp_avg_sq only AdamW's
  // elements, packed (optim: which rule owns which element, and where its state is).
  ShardBuffer exp_avg, exp_avg_sq;
  UnitOptimizerLayout optim;

  HostBuffer upload;    // offload = params under bf16: the shard's cast, until the gather lands
  bool gather_in_flight = false;
};

}  // namespace fsdp
