// SPDX-License-Identifier: MIT
#include "fsdp/sharded_state.hpp"

#include <algorithm>

#include "core/bf16.hpp"
#include "core/check.hpp"
#include "core/host_copy.hpp"
#include "model/architecture.hpp"

namespace fsdp {
ShardedState::ShardedState(const RunSetup& setup, const std::vector<UnitLayout>& layouts,
                           comm::Communicator& shard, comm::Communicator& replicate,
                           MemoryTracker& tracker, std::uint64_t seed, OffloadFile* offload)
    : setup_(setup), shard_(shard), replicate_(replicate), tracker_(tracker), offload_(offload) {
  const Strategy strategy = setup.strategy;
  const int nshard = shard.size(), r = shard.rank();
  // Offload keeps what the optimizer owns in (pinned) host memory; the optimizer step runs
  // there (fsdp/optimizer_step.cpp). On a CPU build both spaces are the one RAM, and the copies
  // between them are real all the same, so the path a GPU takes is the path tested here.
  // nvme: the moments (and with offload.params the parameter shards) are regions of the
  // rank's offload file instead; the gradient shards wait in host memory for the optimizer.
  const bool nvme = setup.offload == Offload::Nvme;
  if (nvme && !offload) fatal("fsdp.offload = nvme without an offload file (the trainer opens it)");
  if (nvme) offload->begin_layout();
  const MemSpace optim_space = setup.offload == Offload::None ? MemSpace::Device : MemSpace::Host;
  const MemSpace param_space = setup.offloads_params() ? MemSpace::Host : MemSpace::Device;
  const Architecture& arch = architecture_of(setup.model);
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
    arch.init_unit(setup.model, *su.layout, full.data(), seed);
    if (setup.params_on_disk()) {
      su.params = ShardBuffer(*offload, su.shard);
      su.params.view().copy_from(full.data() + su.shard_begin);
    } else if (shards_params(strategy)) {
      su.params = ShardBuffer(tracker, name + "::param_shard", su.shard, MemCategory::ParamShard,
                              param_space);
      su.params.view().copy_from(full.data() + su.shard_begin);
    } else {
      su.params = ShardBuffer(tracker, name + "::params", su.padded, MemCategory::ParamShard,
                              MemSpace::Device);
      su.params.view().copy_from(full.data());
    }
    if (shards_grads(strategy))
      su.grad_shard =
          ShardBuffer(tracker, name + "::grad_shard", su.shard, MemCategory::Grads, param_space);
    else
      su.grad_full = TrackedBuffer(tracker, name + "::grads", su.padded, MemCategory::Grads);
    if (nvme) {  // zeros: the file's reserved room reads as zeros until written
      su.exp_avg = ShardBuffer(*offload, su.shard);
      su.exp_avg_sq = ShardBuffer(*offload, su.shard);
    } else {
      su.exp_avg = ShardBuffer(tracker, name + "::exp_avg", su.shard, MemCategory::OptimizerState,
                               optim_space);
      su.exp_avg_sq = ShardBuffer(tracker, name + "::exp_avg_sq", su.shard,
                                  MemCategory::OptimizerState, optim_space);
    }
  }
}

std::int64_t ShardedState::offload_bytes(const RunSetup& setup,
                                         const std::vector<UnitLayout>& layouts) {
  std::vector<std::int64_t> shards;
  for (const UnitLayout& l : layouts) shards.push_back(setup.padded_numel(l.numel) / setup.shard_group());
  return offload_file_bytes(shards, setup.offload_regions());
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

ShardVec ShardedState::param_shard(int u) {
  ShardedUnit& su = units_[std::size_t(u)];
  if (shards_params(setup_.strategy)) return su.params.view();
  return su.params.view(su.shard_begin, su.shard);
}

ShardVec ShardedState::grad_shard(int u) {
  ShardedUnit& su = units_[std::size_t(u)];
  if (shards_grads(setup_.strategy)) return su.grad_shard.view();
  return ShardVec::on_device(su.grad_full.vec(su.shard_begin, su.shard));
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
    const Vec own(full.data() + su.shard_begin, su.shard);
    const ShardVec p = su.params.view();
    if (p.on_disk()) {
      const std::vector<float> v = p.values();
      Kokkos::deep_copy(own, HostConstVec(v.data(), v.size()));
    } else if (p.in_host_memory()) {
      host_copy::to_device(own, p.host());
    } else {
      Kokkos::deep_copy(own, p.device());
    }
    shard_.all_gather(ConstVec(own.data(), su.shard), Vec(full.data(), su.padded));
    Kokkos::deep_copy(HostVec(out.data(), su.padded), full);
  } else {
    su.params.view().copy_to(out.data());
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
      cast_to_bf16(param_shard(u).device(), own);
      shard_.all_gather(ConstBf16Vec(own.data(), su.shard), full.bf16());
      const std::int64_t end = su.shard_begin + su.shard;
      widen_bf16(ConstBf16Vec(full.bf16().data(), su.shard_begin),
                 subvec(su.params.device(), 0, std::size_t(su.shard_begin)));
      widen_bf16(ConstBf16Vec(full.bf16().data() + end, su.padded - end),
                 subvec(su.params.device(), std::size_t(end), std::size_t(su.padded - end)));
      continue;
    }
    TrackedBuffer tmp(tracker_, su.layout->name + "::param_gather_send", su.shard,
                      MemCategory::CommBuffers);
    Kokkos::deep_copy(tmp.vec(), param_shard(u).device());
    shard_.all_gather(tmp.cvec(), su.params.device());
  }
}

}  // namespace fsdp
