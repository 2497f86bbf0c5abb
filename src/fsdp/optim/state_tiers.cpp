// SPDX-License-Identifier: MIT
// The three tiers whose state is whole in memory: the device (fsdp.offload = none), host memory
// holding everything (params), and host memory with the device's parameter and gradient shards
// staged down and up (optimizer). The streamed tier is fsdp/optim/state_tier_nvme.cpp.
#include <algorithm>

#include "core/host_copy.hpp"
#include "fsdp/optim/optimizer_step.hpp"
#include "fsdp/sharded_state.hpp"
#include "fsdp/optim/state_tier.hpp"

namespace fsdp {

std::unique_ptr<StateTier> make_streamed_tier(ShardedState& state, MemoryTracker& tracker);

namespace {

// offload = none (the device) or params (host memory, with the parameter and gradient shards):
// every buffer is whole where the rule runs, and the rule zeroes the gradients it reads last
// (persistent ones exist only without offload: ddp, zero1).
template <bool OnHost>
class InPlaceTier final : public StateTier {
 public:
  explicit InPlaceTier(ShardedState& s) : state_(s) {}
  void sweep(UpdateRule& rule, bool zero_grads, const std::function<void(int)>& updated) override {
    for (int u = 0; u < int(state_.units().size()); ++u) {
      const ShardedUnit& su = state_.units()[std::size_t(u)];
      if (!su.trains()) {  // frozen: nothing to update
        if (updated) updated(u);
        continue;
      }
      const auto in = [](const ShardVec& v) {
        if constexpr (OnHost) return v.host();
        else return v.device();
      };
      StatePiece<decltype(in(su.exp_avg.view()))> s;
      s.unit = u;
      s.n = su.train_shard;
      s.p = in(state_.train_params(u));
      s.g = in(state_.grad_shard(u));
      s.m = in(su.exp_avg.view());
      s.v = in(su.exp_avg_sq.view());
      s.zero_grads = zero_grads;
      if constexpr (OnHost) rule.on_host(su.optim, s);
      else rule.on_device(su.optim, s);
      if (updated) updated(u);
    }
  }

 private:
  ShardedState& state_;
};

// offload = optimizer: unit u's parameter and gradient shards come down into staging set u % 2
// while the host updates unit u - 1, and what the rule changed goes back up. Each wait covers
// unit u's down copies and unit u - 1's up copies (one stream, in issue order), which frees set
// (u + 1) % 2 for unit u + 1 and lets unit u - 1's next gathers start.
class StagedTier final : public StateTier {
 public:
  StagedTier(ShardedState& s, MemoryTracker& tracker)
      : state_(s), tracker_(tracker) {
    const std::int64_t n = largest_shard(s.units());
    for (Staging& st : staging_) {
      st.params = HostBuffer(tracker, "optimizer_staging::params", n, MemCategory::CommBuffers);
      st.grads = HostBuffer(tracker, "optimizer_staging::grads", n, MemCategory::CommBuffers);
    }
  }
  void sweep(UpdateRule& rule, bool zero_grads, const std::function<void(int)>& updated) override {
    const StateAccess a = rule.access();
    const int U = int(state_.units().size());
    const auto down = [&](int u) {
      const ShardedUnit& su = state_.units()[std::size_t(u)];
      const Staging& st = staging_[std::size_t(u % 2)];
      if (!su.trains()) return;  // frozen: nothing to update
      const std::int64_t n = su.train_shard;
      if (a.params) host_copy::to_host(st.params.vec(0, n), state_.train_params(u).device());
      host_copy::to_host(st.grads.vec(0, n), state_.grad_shard(u).device());
      logged(Transfer::DeviceToHost, a.params ? 2 : 1, n);
    };
    if (U > 0) down(0);
    for (int u = 0; u < U; ++u) {
      host_copy::wait_copies(tracker_);
      if (u > 0 && updated) updated(u - 1);
      if (u + 1 < U) down(u + 1);
      const ShardedUnit& su = state_.units()[std::size_t(u)];
      if (!su.trains()) continue;
      const Staging& st = staging_[std::size_t(u % 2)];
      const std::int64_t n = su.train_shard;
      StatePiece<PinnedVec> s;
      s.unit = u;
      s.n = n;
      s.p = st.params.vec(0, n);
      s.g = st.grads.vec(0, n);
      s.m = su.exp_avg.host();
      s.v = su.exp_avg_sq.host();
      rule.on_host(su.optim, s);
      if (a.params)
        host_copy::to_device(state_.train_params(u).device(), ConstPinnedVec(s.p));
      if (a.writes_grads)
        host_copy::to_device(state_.grad_shard(u).device(), ConstPinnedVec(s.g));
      logged(Transfer::HostToDevice, (a.params ? 1 : 0) + (a.writes_grads ? 1 : 0), n);
      if (zero_grads && a.last_grad_read && !tracker_.counting())
        Kokkos::deep_copy(ExecSpace(), state_.grad_shard(u).device(), 0.f);
    }
    host_copy::wait_copies(tracker_);
    if (U > 0 && updated) updated(U - 1);
  }

 private:
  struct Staging {
    HostBuffer params, grads;  // the largest unit's shard each
  };
  // The counted run: n shards of `elements` floats copied (its empty views show no bytes).
  void logged(Transfer op, int n, std::int64_t elements) {
    if (n > 0) host_copy::count_copy(tracker_, op, 4.0 * double(n) * double(elements));
  }
  ShardedState& state_;
  const MemoryTracker& tracker_;  // a counting one: no kernel runs, the copies are logged
  Staging staging_[2];
};

}  // namespace

std::unique_ptr<StateTier> make_state_tier(ShardedState& state, MemoryTracker& tracker) {
  switch (state.setup().offload) {
    case Offload::None:
      return std::make_unique<InPlaceTier<false>>(state);
    case Offload::Params:
      return std::make_unique<InPlaceTier<true>>(state);
    case Offload::Optimizer:
      return std::make_unique<StagedTier>(state, tracker);
    case Offload::Nvme:
      return make_streamed_tier(state, tracker);
  }
  return nullptr;
}

}  // namespace fsdp
