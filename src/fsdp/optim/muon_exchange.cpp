// SPDX-License-Identifier: MIT
#include "fsdp/optim/muon_exchange.hpp"

#include <algorithm>

#include "core/host_copy.hpp"
#include "core/step_log.hpp"
#include "fsdp/sharded_state.hpp"
#include "fsdp/optim/newton_schulz.hpp"

namespace fsdp {

MuonExchange::MuonExchange(ShardedState& state, MemoryTracker& tracker, int ns_steps, bool bf16)
    : state_(state), ns_steps_(ns_steps), bf16_(bf16), counted_(tracker.counting()),
      log_(tracker.log()) {
  const RunLayout& layout = state.layout();
  const MuonOwners owners = muon_owners(layout, ns_steps);
  std::vector<int> positions;
  for (std::size_t u = 0; u < state.units().size(); ++u) {
    const ShardedUnit& su = state.units()[u];
    for (std::size_t k = 0; k < su.parts.size(); ++k) {
      const PartShard& ps = su.parts[k];
      // Owners are pieces of the whole part (fsdp/optim/muon_owners.hpp); the exchange runs over the
      // gather group, whose rank q stores piece first + q (a divided part: its slice's pieces).
      const int S = ps.shard_comm->size(), me = ps.shard_comm->rank(), first = ps.position - me;
      if (int(positions.size()) <= ps.part.placement) positions.resize(std::size_t(ps.part.placement) + 1, 0);
      positions[std::size_t(ps.part.placement)] = ps.position;
      const std::vector<TensorSpec>& ts = layout.part_units[u][k].tensors;
      const std::vector<int>& owner = owners.owner[u][k];
      if (std::all_of(owner.begin(), owner.end(), [](int q) { return q < 0; })) continue;
      Round r;
      r.unit = int(u);
      r.comm = ps.shard_comm;
      const auto range_of = [&](int q, const TensorSpec& t) {  // group rank q's slice of t
        const std::int64_t lo = std::max((first + q) * ps.shard, t.offset);
        const std::int64_t hi = std::min((first + q + 1) * ps.shard, t.offset + t.numel);
        return std::make_pair(lo, std::max(lo, hi));
      };
      // The gather: to each owner q in turn, this rank's slices of q's matrices, in model order.
      std::vector<std::int64_t> send(std::size_t(S), 0), recv(std::size_t(S), 0);
      std::int64_t at = 0;
      for (int q = 0; q < S; ++q)
        for (std::size_t i = 0; i < ts.size(); ++i) {
          if (owner[i] != first + q) continue;
          const auto [lo, hi] = range_of(me, ts[i]);
          if (hi == lo) continue;
          r.mine.push_back({ps.shard_offset + (lo - ps.shard_begin), at, hi - lo});
          at += hi - lo;
          send[std::size_t(q)] += hi - lo;
        }
      // What arrives: from each rank q, its slices of this rank's matrices, which land whole
      // and row-major in the gathered buffer.
      std::vector<std::int64_t> base(ts.size(), -1);
      std::int64_t total = 0;
      for (std::size_t i = 0; i < ts.size(); ++i)
        if (owner[i] == ps.position) {
          base[i] = total;
          r.owned.push_back({total, ts[i].shape[0], ts[i].shape[1]});
          flops_ += optim::newton_schulz_flops(ts[i].shape[0], ts[i].shape[1], ns_steps);
          total += ts[i].numel;
        }
      at = 0;
      for (int q = 0; q < S; ++q)
        for (std::size_t i = 0; i < ts.size(); ++i) {
          if (owner[i] != ps.position) continue;
          const auto [lo, hi] = range_of(q, ts[i]);
          if (hi == lo) continue;
          r.theirs.push_back({base[i] + (lo - ts[i].offset), at, hi - lo});
          at += hi - lo;
          recv[std::size_t(q)] += hi - lo;
        }
      r.send = comm::PeerBlocks::packed(send);
      r.recv = comm::PeerBlocks::packed(recv);
      rounds_.push_back(std::move(r));
    }
  }
  const MuonBuffers b = muon_buffers(layout, owners, positions, bf16);
  for (int k = 0; k < 2; ++k) {
    send_[k] = TrackedBuffer(tracker, "muon::send", b.send, MemCategory::CommBuffers);
    recv_[k] = TrackedBuffer(tracker, "muon::recv", b.gathered, MemCategory::CommBuffers);
  }
  gathered_ = TrackedBuffer(tracker, "muon::gathered", b.gathered, MemCategory::CommBuffers);
  work_ = TrackedBuffer(tracker, "muon::newton_schulz", b.work, MemCategory::CommBuffers);
}

void MuonExchange::pack(const Round& r, const Vec& send) {
  const ShardVec g = state_.grad_shard(r.unit);
  for (const Piece& p : r.mine) {
    const Vec dst(send.data() + p.buf_at, std::size_t(p.n));
    if (g.on_device()) Kokkos::deep_copy(ExecSpace(), dst, g.sub(p.shard_at, p.n).device());
    else host_copy::to_device(dst, ConstPinnedVec(g.sub(p.shard_at, p.n).host()));
  }
  host_copy::wait_copies();
  ExecSpace().fence();
}

void MuonExchange::unpack(const Round& r, const Vec& send) {
  const ShardVec g = state_.grad_shard(r.unit);
  for (const Piece& p : r.mine) {
    const ConstVec src(send.data() + p.buf_at, std::size_t(p.n));
    if (g.on_device()) Kokkos::deep_copy(ExecSpace(), g.sub(p.shard_at, p.n).device(), src);
    else host_copy::to_host(g.sub(p.shard_at, p.n).host(), src);
  }
}

void MuonExchange::orthogonalise() {
  // The counted run (the planner's): the same rounds over buffers sized but never made, with
  // nothing packed or computed; each round's Newton-Schulz FLOPs go in the step's log.
  const auto wire = [&](const TrackedBuffer& b) { return counted_ ? b.wire() : b.vec(); };
  const int R = int(rounds_.size());
  std::vector<comm::Handle> gathers(2), returns(2);
  const auto post_gather = [&](int i) {
    const Round& r = rounds_[std::size_t(i)];
    const Vec send = wire(send_[i % 2]), recv = wire(recv_[i % 2]);
    if (!counted_) pack(r, send);
    gathers[std::size_t(i % 2)] = r.comm->iall_to_all_v(ConstVec(send), r.send, recv, r.recv);
  };
  const auto finish_return = [&](int i) {  // round i's slices of the result, into the shards
    returns[std::size_t(i % 2)].wait();
    if (!counted_) unpack(rounds_[std::size_t(i)], send_[i % 2].vec());
  };
  if (R > 0) post_gather(0);
  for (int i = 0; i < R; ++i) {
    // The next round's gather goes out first, to travel while this round's owners iterate; its
    // buffers are round i - 1's, whose result must be home first.
    if (i >= 1) finish_return(i - 1);
    if (i + 1 < R) post_gather(i + 1);
    const Round& r = rounds_[std::size_t(i)];
    gathers[std::size_t(i % 2)].wait();
    if (counted_) {
      double f = 0.0;
      for (const Owned& m : r.owned) f += optim::newton_schulz_flops(m.rows, m.cols, ns_steps_);
      if (log_ && f > 0) log_->compute(f);
    } else {
      const Vec recv = recv_[i % 2].vec(), mats = gathered_.vec();
      for (const Piece& p : r.theirs)
        Kokkos::deep_copy(ExecSpace(), Vec(mats.data() + p.shard_at, std::size_t(p.n)),
                          ConstVec(recv.data() + p.buf_at, std::size_t(p.n)));
      for (const Owned& m : r.owned)
        optim::newton_schulz(Vec(mats.data() + m.at, std::size_t(m.rows * m.cols)), m.rows, m.cols,
                             ns_steps_, work_.vec(), bf16_);
      for (const Piece& p : r.theirs)
        Kokkos::deep_copy(ExecSpace(), Vec(recv.data() + p.buf_at, std::size_t(p.n)),
                          ConstVec(mats.data() + p.shard_at, std::size_t(p.n)));
      ExecSpace().fence();
    }
    returns[std::size_t(i % 2)] =
        r.comm->iall_to_all_v(ConstVec(wire(recv_[i % 2])), r.recv, wire(send_[i % 2]), r.send);
  }
  if (R > 0) finish_return(R - 1);
  if (counted_) return;
  host_copy::wait_copies();
  ExecSpace().fence();
}

}  // namespace fsdp
