// SPDX-License-Identifier: MIT
#include "fsdp/sharded_state.hpp"

#include <algorithm>

#include "core/bf16.hpp"
#include "core/check.hpp"
#include "core/host_copy.hpp"
#include "model/architecture.hpp"

namespace fsdp {
ShardedState::ShardedState(const RunSetup& setup, RunLayout layout, comm::DeviceMesh& mesh,
                           MemoryTracker& tracker, std::uint64_t seed, OffloadFile* offload)
    : setup_(setup),
      layout_(std::move(layout)),
      shard_(mesh.group(comm::MeshDim::Shard)),
      replicate_(mesh.group(comm::MeshDim::Replicate)),
      tracker_(tracker),
      offload_(offload) {
  const Strategy strategy = setup.strategy;
  // Offload keeps what the optimizer owns in (pinned) host memory; the optimizer step runs
  // there (fsdp/optim/optimizer_step.cpp). On a CPU build both spaces are the one RAM, and the copies
  // between them are real all the same, so the path a GPU takes is the path tested here.
  // nvme: the moments (and with offload.params the parameter shards) are regions of the
  // rank's offload file instead; the gradient shards wait in host memory for the optimizer.
  const bool nvme = setup.offload == Offload::Nvme;
  if (nvme && !offload) fatal("fsdp.offload = nvme without an offload file (the trainer opens it)");
  if (nvme) offload->begin_layout();
  const MemSpace optim_space = setup.offload == Offload::None ? MemSpace::Device : MemSpace::Host;
  const MemSpace param_space = setup.offloads_params() ? MemSpace::Host : MemSpace::Device;
  units_.resize(layout_.units.size());
  // Every unit's parts first, then the buffers: the small allocations kept out of the sequence of
  // large ones, whose pattern glibc's adaptive mmap threshold turns into resident memory (parts
  // interleaved with them held 27 MiB more at GPT-2 124M's peak).
  for (std::size_t u = 0; u < units_.size(); ++u) {
    ShardedUnit& su = units_[u];
    su.layout = &layout_.units[u];
    su.stored = &layout_.stored[u];
    su.numel = su.layout->numel;
    su.padded = layout_.padded(int(u));
    su.whole = layout_.whole(int(u));
    std::vector<int> positions;
    for (std::size_t i = 0; i < layout_.parts[u].size(); ++i) {
      PartShard ps;
      ps.part = layout_.parts[u][i];
      ps.layout = &layout_.part_units[u][i];
      int position = 0;
      const RunSetup::PartGroups groups = setup.part_groups(ps.part.placement);
      ps.shard_comm = &mesh.group(groups.shard);
      ps.replicate_comm = &mesh.group(groups.replicate);
      if (ps.part.slices > 1) {
        // Divided: gathered and reduced over the slice's ranks, stored whole over the shard group.
        ps.store_comm = &shard_;
        const PartRank pr = part_rank(setup, ps.part.placement, mesh.rank());
        if (pr.gather != ps.shard_comm->rank())
          fatal("unit " + su.layout->name + ": slice group position " + std::to_string(ps.shard_comm->rank()) +
                ", planned " + std::to_string(pr.gather));
        position = pr.position;
      } else {
        ps.store_comm = ps.shard_comm;
        position = ps.shard_comm->rank();
      }
      if (ps.shard_comm->size() != ps.part.shard_group)
        fatal("unit " + su.layout->name + ": a part planned over " +
              std::to_string(ps.part.shard_group) + " ranks has a shard group of " +
              std::to_string(ps.shard_comm->size()));
      ps.shard = ps.part.shard();
      ps.position = position;
      ps.shard_begin = std::int64_t(position) * ps.shard;
      ps.shard_offset = su.shard;
      su.shard += ps.shard;
      positions.push_back(position);
      su.parts.push_back(std::move(ps));
    }
    su.shard_begin = su.parts.size() == 1 ? su.parts[0].shard_begin : 0;
    // The trained range starts at the first trained part (frozen parts come first). ddp and
    // zero1 find the rank's trained shard in grad_full where a one-part unit's shard is; a
    // unit of several parts is whole on every rank there (ddp: zero1 refuses several parts).
    su.grad_base = su.padded;
    su.train_offset = su.shard;
    for (const PartShard& ps : su.parts)
      if (ps.part.trainable) {
        su.grad_base = ps.part.base;
        su.train_offset = ps.shard_offset;
        su.grad_begin = su.parts.size() == 1 ? ps.shard_begin : 0;
        break;
      }
    su.train_shard = su.shard - su.train_offset;
    su.optim = optimizer_layout(layout_, int(u), positions, setup.muon_optimizer(), !nvme);
  }
  for (std::size_t u = 0; u < units_.size(); ++u) {
    ShardedUnit& su = units_[u];
    const std::string& name = su.layout->name;

    // Every rank initialises the whole unit the same way and keeps what it owns (a counting
    // tracker's buffers hold nothing to initialise).
    std::vector<float> full(tracker.counting() ? 0 : su.whole, 0.f);
    if (!tracker.counting()) init_model_unit(setup.model, *su.stored, full.data(), seed);
    const auto keep_own = [&](const ShardVec& shard) {
      for (const PartShard& ps : su.parts)
        shard.sub(ps.shard_offset, ps.shard).copy_from(full.data() + ps.flat_begin());
    };
    if (setup.params_on_disk()) {
      su.params = ShardBuffer(*offload, su.shard);
      keep_own(su.params.view());
    } else if (shards_params(strategy)) {
      su.params = ShardBuffer(tracker, name + "::param_shard", su.shard, MemCategory::ParamShard,
                              param_space);
      keep_own(su.params.view());
    } else {
      su.params = ShardBuffer(tracker, name + "::params", su.padded, MemCategory::ParamShard,
                              MemSpace::Device);
      su.params.view().copy_from(full.data());
    }
    if (!su.trains()) continue;  // frozen: no gradient and no optimizer state
    if (shards_grads(strategy))
      su.grad_shard =
          ShardBuffer(tracker, name + "::grad_shard", su.train_shard, MemCategory::Grads, param_space);
    else
      su.grad_full = TrackedBuffer(tracker, name + "::grads", su.grad_numel(), MemCategory::Grads);
    if (nvme) {  // zeros: the file's reserved room reads as zeros until written
      su.exp_avg = ShardBuffer(*offload, su.shard);
      su.exp_avg_sq = ShardBuffer(*offload, su.shard);
    } else {
      su.exp_avg = ShardBuffer(tracker, name + "::exp_avg", su.train_shard, MemCategory::OptimizerState,
                               optim_space);
      su.exp_avg_sq = ShardBuffer(tracker, name + "::exp_avg_sq", su.optim.sq_size,
                                  MemCategory::OptimizerState, optim_space);
    }
  }
}

std::int64_t ShardedState::offload_bytes(const RunSetup& setup, const RunLayout& layout) {
  std::vector<std::int64_t> shards;
  for (int u = 0; u < int(layout.units.size()); ++u) shards.push_back(layout.shard(u));
  return offload_file_bytes(shards, setup.offload_regions());
}

std::int64_t ShardedState::padded_params() const {
  std::int64_t n = 0;
  for (const auto& su : units_) n += su.whole;
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

ShardVec ShardedState::train_params(int u) {
  const ShardedUnit& su = units_[std::size_t(u)];
  return param_shard(u).sub(su.train_offset, su.train_shard);
}

ShardVec ShardedState::grad_shard(int u) {
  ShardedUnit& su = units_[std::size_t(u)];
  if (shards_grads(setup_.strategy)) return su.grad_shard.view();
  if (tracker_.counting()) return ShardVec::counted(su.train_shard, false);
  return ShardVec::on_device(su.grad_full.vec(su.grad_begin, su.train_shard));
}

std::vector<UnitShard> ShardedState::unit_shards() {
  std::vector<UnitShard> out;
  for (int u = 0; u < int(units_.size()); ++u) {
    const ShardedUnit& su = units_[std::size_t(u)];
    const ShardVec p = param_shard(u);
    for (std::size_t k = 0; k < su.parts.size(); ++k) {
      const PartShard& ps = su.parts[k];
      const auto in = [&](const ShardVec& x) { return x.sub(ps.shard_offset, ps.shard); };
      UnitShard s{ps.layout, ps.shard_begin, ps.shard, in(p), {}, {},
                  ps.part.placement, ps.writes(), setup_.muon_optimizer(), {}};
      if (!ps.part.trainable) {  // frozen: its parameters alone
        out.push_back(std::move(s));
        continue;
      }
      // The optimizer state covers the trained range of the shard buffers.
      const ShardVec m = exp_avg_shard(u), v = exp_avg_sq_shard(u);
      const auto trained = [&](const ShardVec& x) { return x.sub(ps.shard_offset - su.train_offset, ps.shard); };
      s.exp_avg = trained(m);
      if (!su.optim.packed()) {
        s.exp_avg_sq = trained(v);
      } else {
        // The part's AdamW elements are one run of the packed second moments, in shard order.
        std::int64_t sq_begin = -1, sq_n = 0;
        s.sq_shift.assign(ps.layout->tensors.size(), 0);
        for (const StateSegment& seg : su.optim.segments) {
          if (seg.part != int(k) || seg.muon) continue;
          if (sq_begin < 0) sq_begin = seg.sq_at;
          sq_n += seg.n;
          s.sq_shift[std::size_t(seg.tensor - ps.layout->tensors.data())] =
              (seg.at + su.train_offset - ps.shard_offset) - (seg.sq_at - sq_begin);
        }
        s.exp_avg_sq = v.sub(std::max<std::int64_t>(sq_begin, 0), sq_n);
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<float> ShardedState::full_params(int u) {
  ShardedUnit& su = units_[std::size_t(u)];
  std::vector<float> out(su.whole);
  if (shards_params(setup_.strategy)) {
    FlatView full("sharded_state::full_params", su.whole);
    const ShardVec shard = su.params.view();
    for (const PartShard& ps : su.parts) {
      const Vec own(full.data() + ps.flat_begin(), ps.shard);
      const ShardVec p = shard.sub(ps.shard_offset, ps.shard);
      if (p.on_disk()) {
        const std::vector<float> v = p.values();
        Kokkos::deep_copy(own, HostConstVec(v.data(), v.size()));
      } else if (p.in_host_memory()) {
        host_copy::to_device(own, p.host());
      } else {
        Kokkos::deep_copy(own, p.device());
      }
      if (ps.part.slices == 1) {
        ps.shard_comm->all_gather(ConstVec(own.data(), ps.shard),
                                  Vec(full.data() + ps.part.store, ps.part.padded));
        continue;
      }
      // Divided: shard-group position q holds piece (q % P) S/P + q / P of the whole part.
      comm::Communicator& g = *ps.store_comm;
      FlatView pieces("sharded_state::full_params_pieces", ps.part.padded);
      g.all_gather(ConstVec(own.data(), ps.shard), Vec(pieces.data(), ps.part.padded));
      const int S = g.size(), P = ps.part.slices;
      for (int q = 0; q < S; ++q) {
        const std::int64_t piece = std::int64_t(q % P) * (S / P) + q / P;
        Kokkos::deep_copy(Vec(full.data() + ps.part.store + piece * ps.shard, ps.shard),
                          Vec(pieces.data() + std::int64_t(q) * ps.shard, ps.shard));
      }
    }
    Kokkos::deep_copy(HostVec(out.data(), su.whole), full);
  } else {
    su.params.view().copy_to(out.data());
  }
  std::int64_t end = 0;
  for (const TensorSpec& t : su.stored->tensors) end = std::max(end, t.offset + t.numel);
  out.resize(std::size_t(end));
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
      const bool compute = !tracker_.counting();  // a counting tracker's buffers hold nothing
      if (compute) cast_to_bf16(param_shard(u).device(), own);
      shard_.all_gather(ConstBf16Vec(own.data(), su.shard), Bf16Vec(full.bf16().data(), su.padded));
      if (!compute) continue;
      const std::int64_t end = su.shard_begin + su.shard;
      widen_bf16(ConstBf16Vec(full.bf16().data(), su.shard_begin),
                 subvec(su.params.device(), 0, std::size_t(su.shard_begin)));
      widen_bf16(ConstBf16Vec(full.bf16().data() + end, su.padded - end),
                 subvec(su.params.device(), std::size_t(end), std::size_t(su.padded - end)));
      continue;
    }
    TrackedBuffer tmp(tracker_, su.layout->name + "::param_gather_send", su.shard,
                      MemCategory::CommBuffers);
    if (!tracker_.counting()) Kokkos::deep_copy(tmp.vec(), param_shard(u).device());
    shard_.all_gather(tmp.wire(), su.params.view().wire());
  }
}

}  // namespace fsdp
