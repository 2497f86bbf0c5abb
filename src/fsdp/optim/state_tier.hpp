// SPDX-License-Identifier: MIT
// The optimizer's one seam over where its state lives. A tier (the device; host memory under
// fsdp.offload = params; host memory with the device's shards staged down and up under
// optimizer; pieces streamed through the host from the rank's offload file under nvme) brings
// each unit's parameter, gradient and state shards to where an update rule computes, hands them
// over, and puts back what the rule changed. An update rule (fsdp/optim/update_rules.hpp: AdamW, and
// Muon's two elementwise passes) is written once, as a template over the execution space, and
// every tier serves every rule.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

#include "core/memory.hpp"
#include "core/types.hpp"
#include "fsdp/optim/optimizer_layout.hpp"

namespace fsdp {

class ShardedState;

// What a pass reads and writes, so a tier moves nothing else.
struct StateAccess {
  bool params = true;         // reads and writes the parameter shard
  bool moments = true;        // reads and writes exp_avg and exp_avg_sq
  bool writes_grads = false;  // leaves in the gradient shard what a later pass reads
  bool last_grad_read = true;  // the step's last read of the gradients: zero them after it
};

// Elements [lo, lo + n) of unit u's shard, where Exec runs. p, g, m hold the piece's elements;
// v holds second moments from index sq_lo on (the packed buffer whole, or the piece's own).
template <class V>
struct StatePiece {
  int unit = 0;
  std::int64_t lo = 0, n = 0;
  V p, g, m, v;
  std::int64_t sq_lo = 0;
  bool zero_grads = false;  // the rule leaves g zeroed (the tier's own buffers: else it does)
};

class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  virtual StateAccess access() const = 0;
  virtual void on_device(const UnitOptimizerLayout& l, const StatePiece<Vec>& s) = 0;
  virtual void on_host(const UnitOptimizerLayout& l, const StatePiece<PinnedVec>& s) = 0;
};

// A rule's body is one member template run<Exec>(layout, piece); this gives it both entries.
template <class Rule>
class UpdateRuleOf : public UpdateRule {
 public:
  void on_device(const UnitOptimizerLayout& l, const StatePiece<Vec>& s) override {
    static_cast<Rule*>(this)->template run<ExecSpace>(l, s);
  }
  void on_host(const UnitOptimizerLayout& l, const StatePiece<PinnedVec>& s) override {
    static_cast<Rule*>(this)->template run<HostExecSpace>(l, s);
  }
};

class StateTier {
 public:
  virtual ~StateTier() = default;
  // Runs `rule` over every unit's shard in unit order. zero_grads: the gradients the rule reads
  // last are persistent (ddp, zero1) and are left zeroed. updated(u), when set, is called once
  // unit u's new parameters are where the gathers read them.
  virtual void sweep(UpdateRule& rule, bool zero_grads, const std::function<void(int)>& updated) = 0;
  // nvme: the first pieces' disk reads, posted early (a no-op elsewhere).
  virtual void prefetch() {}
};

// The tier fsdp.offload puts the state in, with the buffers it needs.
std::unique_ptr<StateTier> make_state_tier(ShardedState& state, MemoryTracker& tracker);

// The runs of layout l's segments inside piece [lo, lo + n): f(segment, offset in the piece,
// length, offset in the segment).
template <class F>
void for_segments(const UnitOptimizerLayout& l, std::int64_t lo, std::int64_t n, F&& f) {
  for (const StateSegment& s : l.segments) {
    const std::int64_t a = s.at > lo ? s.at : lo;
    const std::int64_t z = s.at + s.n < lo + n ? s.at + s.n : lo + n;
    if (a < z) f(s, a - lo, z - a, a - s.at);
  }
}

}  // namespace fsdp
