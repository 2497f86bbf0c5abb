// SPDX-License-Identifier: MIT
// The gradient side of the step, the mirror of the all-gather prefetch pipeline: after a unit's
// last backward use its full gradient is reduce-scattered into the rank's gradient shard (or,
// under ddp, all-reduced in place), non-blocking, while the next units' backward runs; at most
// `depth` reductions stay in flight, one collective per part over the part's own shard group.
// Under fsdp.reduce_dtype = bf16 the gradient travels as a bf16 cast and is summed in fp32;
// hybrid (or a part on part of the shard group) then all-reduces each part's reduced slice
// across its replicas.
#pragma once
#include <vector>

#include "fsdp/gather_pipeline.hpp"
#include "fsdp/sharded_state.hpp"

namespace fsdp {

class ReducePipeline {
 public:
  ReducePipeline(ShardedState& state, MemoryTracker& tracker, Trace& trace, int depth,
                 CommTimes& times);

  // A new step: with `direct`, each unit's first reduction lands straight in its gradient shard
  // (no receive buffer, no zero fill, no accumulation pass).
  void begin_step(bool direct);
  // Before unit u's backward: a reduction of its previous micro-batch may still read its full
  // gradient (finished first); the full gradient exists.
  void before_backward(int u);
  // Unit u's gradient is final for this micro-batch: issue its reduction.
  void reduce_scatter(int u);  // zero1, zero2, zero3, hybrid
  void all_reduce(int u);      // ddp
  // Waits for all but the newest `keep` reductions and lands their results.
  void drain(std::size_t keep);
  // Every reduction done; a gradient shard no reduction reached is zeroed.
  void finish_step();

 private:
  struct Pending {
    int unit;
    std::vector<comm::Handle> handles;  // one per part (ddp: one for the unit)
    TrackedBuffer recv;
    TrackedBuffer send;   // fsdp.reduce_dtype = bf16: the cast of the unit's gradients
    bool direct = false;  // reduced straight into the gradient shard (recv unused)
    bool first = false;   // the step's first reduction into the shard: nothing to add to
  };
  Pending cast_for_send(int u);  // under bf16, the cast the collective sends
  void land(Pending& p);
  void land_on_host(Pending& p, const PinnedVec& dst);  // fsdp.offload = params
  // The second half of a bf16 all-reduce whose reduce-scatter of `send` into `block` is done:
  // round the averaged block to bf16, all-gather it into `send`, widen into `out`.
  void finish_bf16_all_reduce(comm::Communicator& c, TrackedBuffer& send,
                              const TrackedBuffer& block, Vec out);
  void all_reduce_bf16(comm::Communicator& c, Vec buf);

  ShardedState& state_;
  std::vector<ShardedUnit>& units_;
  MemoryTracker& tracker_;
  Trace& trace_;
  int depth_;
  CommTimes& times_;
  bool bf16_;
  std::vector<char> fresh_;  // per unit: no reduction has reached its gradient shard yet
  std::vector<Pending> pending_;
};

}  // namespace fsdp
