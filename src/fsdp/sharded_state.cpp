// SPDX-License-Identifier: MIT
#include "fsdp/sharded_state.hpp"

#include <algorithm>

#include "core/bf16.hpp"

namespace fsdp {
ShardedState::ShardedState(const RunSetup& setup, const std::vector<UnitLayout>& layouts,
                           comm::Communicator& shard, comm::Communicator& replicate,
                           MemoryTracker& tracker, std::uint64_t seed)
    : setup_(setup), shard_(shard), replicate_(replicate), tracker_(tracker) {
  const Strategy strategy = setup.strategy;
  const int nshard = shard.size(), r = shard.rank();
  // Offload keeps what the optimizer owns in host memory; the optimizer step runs there. On a
  // CPU build host and device share one RAM, but the tracker accounts the spaces separately, so
  // the device saving is measured here and real on a GPU.
  const MemSpace optim_space = setup.offload == Offload::None ? MemSpace::Device : MemSpace::Host;
  const MemSpace param_space = setup.offload == Offload::Params ? MemSpace::Host : MemSpace::Device;
  units_.resize(layouts.size());
  for (std::size_t u = 0; u < units_.size(); ++u) {
    ShardedUnit& su = units_[u];
    su.layout = &layouts[u];
    su.numel = su.layout->numel;
    su.padded = setup.padded_numel(su.numel);
    su.shard = su.padded / nshard;
    su.shard_begin = std::int64_t(r) * su.shard;
    const std::string& name = su.layout->name;

    // Every rank initialises the full unit the same way and keeps what it owns.
    std::vector<float> full(su.padded, 0.f);
    gpt2_init_unit(*su.layout, full.data(), seed, setup.model.n_layer);
    if (shards_params(strategy)) {
      su.params = TrackedBuffer(tracker, name + "::param_shard", su.shard, MemCategory::ParamShard,
                                param_space);
      Kokkos::deep_copy(su.params.vec(), HostConstVec(full.data() + su.shard_begin, su.shard));
    } else {
      su.params = TrackedBuffer(tracker, name + "::params", su.padded, MemCategory::ParamShard);
      Kokkos::deep_copy(su.params.vec(), HostConstVec(full.data(), su.padded));
    }
    if (shards_grads(strategy))
      su.grad_shard =
          TrackedBuffer(tracker, name + "::grad_shard", su.shard, MemCategory::Grads, param_space);
    else
      su.grad_full = TrackedBuffer(tracker, name + "::grads", su.padded, MemCategory::Grads);
    su.exp_avg = TrackedBuffer(tracker, name + "::exp_avg", su.shard, MemCategory::OptimizerState,
                               optim_space);
    su.exp_avg_sq = TrackedBuffer(tracker, name + "::exp_avg_sq", su.shard,
                                  MemCategory::OptimizerState, optim_space);
  }
}

std::int64_t ShardedState::padded_params() const {
  std::int64_t n = 0;
  for (const auto& su : units_) n += su.padded;
  return n;
}

std::int64_t ShardedState::largest_unit() const {
  std::int64_t n = 0;
  for (const auto& su : units_) n = std::max(n, su.padded);
  return n;
}

Vec ShardedState::param_shard(int u) {
  ShardedUnit& su = units_[std::size_t(u)];
  if (shards_params(setup_.strategy)) return su.params.vec();
  return su.params.vec(su.shard_begin, su.shard);
}

Vec ShardedState::grad_shard(int u) {
  ShardedUnit& su = units_[std::size_t(u)];
  if (shards_grads(setup_.strategy)) return su.grad_shard.vec();
  return su.grad_full.vec(su.shard_begin, su.shard);
}

std::vector<UnitShard> ShardedState::unit_shards() {
  std::vector<UnitShard> out;
  for (int u = 0; u < int(units_.size()); ++u) {
    const ShardedUnit& su = units_[std::size_t(u)];
    out.push_back({su.layout, su.shard_begin, su.shard, param_shard(u), exp_avg_shard(u),
                   exp_avg_sq_shard(u)});
  }
  return out;
}

std::vector<float> ShardedState::full_params(int u) {
  ShardedUnit& su = units_[std::size_t(u)];
  std::vector<float> out(su.padded);
  if (shards_params(setup_.strategy)) {
    FlatView full("sharded_state::full_params", su.padded);
    shard_.all_gather(su.params.cvec(), Vec(full.data(), su.padded));
    Kokkos::deep_copy(HostVec(out.data(), su.padded), full);
  } else {
    Kokkos::deep_copy(HostVec(out.data(), su.padded), su.params.vec());
  }
  out.resize(su.numel);
  return out;
}

void ShardedState::sync_full_params() {
  if (shards_params(setup_.strategy) || shard_.size() == 1) return;
  for (int u = 0; u < int(units_.size()); ++u) {
    ShardedUnit& su = units_[std::size_t(u)];
    if (setup_.precision == Precision::BF16) {
      // Under bf16 the other ranks' parts are only ever computed with as bf16 values: gather
      // the cast (half the bytes) and keep this rank's part as the fp32 master it is.
      TrackedBuffer full(tracker_, su.layout->name + "::param_gather_bf16", su.padded,
                         MemCategory::CommBuffers, MemSpace::Device, Dtype::BF16);
      const Bf16Vec own(full.bf16().data() + su.shard_begin, su.shard);
      cast_to_bf16(param_shard(u), own);
      shard_.all_gather(ConstBf16Vec(own.data(), su.shard), full.bf16());
      const std::int64_t end = su.shard_begin + su.shard;
      widen_bf16(ConstBf16Vec(full.bf16().data(), su.shard_begin),
                 su.params.vec(0, su.shard_begin));
      widen_bf16(ConstBf16Vec(full.bf16().data() + end, su.padded - end),
                 su.params.vec(end, su.padded - end));
      continue;
    }
    TrackedBuffer tmp(tracker_, su.layout->name + "::param_gather_send", su.shard,
                      MemCategory::CommBuffers);
    Kokkos::deep_copy(tmp.vec(), param_shard(u));
    shard_.all_gather(tmp.cvec(), su.params.vec());
  }
}

}  // namespace fsdp
