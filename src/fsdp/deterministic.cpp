// SPDX-License-Identifier: MIT
// Deterministic mode: per-step losses, gradient norms and parameters bitwise identical on any
// number of ranks N that divides the step's micro-batch count G, for every strategy, fp32 or
// bf16, on any transport.
//  - Each micro-batch's gradient is computed into zeroed buffers (dloss = 1, no 1/G scaling yet),
//    so it is the same computation wherever it runs; with fsdp.reduce_dtype = bf16 it is rounded
//    to bf16 there (elementwise: the same bits wherever it runs).
//  - The G gradients are summed along the canonical tree (canonical_tree.hpp). Rank r holds
//    micro-batches [r G/N, (r+1) G/N) and sums the canonical nodes that cover them, each in tree
//    order. The nodes' sums are exchanged with all-to-alls, which move bits and add nothing:
//    rank w receives its 1/N slice of every node of every rank, combines them in tree order,
//    divides by G, and the ranks that share a shard all-gather their slices of it.
//  - The gradient norm is a fixed-order sum of partial sums over 1024-element blocks of each
//    unit's flat gradient; units are padded to whole blocks per shard so no block straddles ranks.
//  - The step loss is the same tree over the G micro-batch losses.
// The price, per unit: max_cover(G, N) all-to-alls of the unit's gradient (against one
// reduce-scatter), and max_cover + log2(G/N) + 1 gradient sets at the peak (README).
#include <algorithm>
#include <cmath>

#include "core/bf16.hpp"
#include "core/host_copy.hpp"
#include "fsdp/canonical_tree.hpp"
#include "fsdp/engine.hpp"

namespace fsdp {
namespace {

void add_into(const Vec& a, const ConstVec& b) {
  Kokkos::parallel_for(
      "deterministic::tree_add", Kokkos::RangePolicy<ExecSpace>(0, a.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { a(i) += b(i); });
}

// A division, not a multiply by 1/d, as deterministic mode always did: the recorded runs
// (tests/golden) keep their bits.
// out[b] = the sum of squares of g's block b, b < n, each summed in element order in double:
// the same bits wherever it runs; only the n sums come to the host.
template <class Exec, class Space, class V>
void block_sums(const V& g, std::int64_t n, double* out) {
  if (n <= 0) return;
  Kokkos::View<double*, Space> sums("deterministic::block_sums", n);
  Kokkos::parallel_for(
      "deterministic::norm_blocks", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(const std::int64_t b) {
        double s = 0.0;
        for (std::int64_t i = b * kNormBlock; i < (b + 1) * kNormBlock; ++i)
          s += double(g(i)) * double(g(i));
        sums(b) = s;
      });
  Kokkos::deep_copy(Kokkos::View<double*, HostSpace, Unmanaged>(out, n), sums);
}

void divide_into(const Vec& dst, const ConstVec& src, float d) {
  Kokkos::parallel_for(
      "deterministic::mean", Kokkos::RangePolicy<ExecSpace>(0, src.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { dst(i) = src(i) / d; });
}

double tree_sum(const std::vector<double>& v, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) return v[lo];
  const std::size_t mid = lo + (hi - lo) / 2;
  return tree_sum(v, lo, mid) + tree_sum(v, mid, hi);
}

}  // namespace

Engine::GradSet Engine::tree_accumulate(int lo, int hi, const LoadMicroBatch& load,
                                        std::vector<double>& losses) {
  std::vector<ShardedUnit>& units = state_->units();
  if (hi - lo == 1) {
    // The trained parts' gradients (a LoRA run's frozen units have none: an empty buffer).
    for (auto& su : units)
      if (su.trains())
        su.grad_full =
            TrackedBuffer(tracker_, su.layout->name + "::grads", su.grad_numel(), MemCategory::Grads);
    losses.push_back(micro_batch(lo, load, 1.f, /*reduce_last=*/false));
    // reduce_dtype = bf16: what a micro-batch contributes is bf16, rounded here where it is the
    // same computation on any N; a partial sum rounded to bf16 would round where N says.
    if (setup_.reduce_bf16)
      for (auto& su : units)
        if (su.trains()) round_through_bf16(su.grad_full.cvec(), su.grad_full.vec());
    GradSet leaf;
    for (auto& su : units) leaf.push_back(std::move(su.grad_full));
    return leaf;
  }
  const int mid = lo + (hi - lo) / 2;
  GradSet left = tree_accumulate(lo, mid, load, losses);
  GradSet right = tree_accumulate(mid, hi, load, losses);
  if (!counted_)  // the planner's run: buffers counted, nothing summed
    for (std::size_t u = 0; u < left.size(); ++u)
      if (left[u].allocated()) add_into(left[u].vec(), right[u].cvec());
  return left;
}

void Engine::tree_reduce_grads(int n_micro, const LoadMicroBatch& load,
                               std::vector<double>& losses) {
  comm::Communicator& world = mesh_.world();
  std::vector<ShardedUnit>& units = state_->units();
  const int N = world.size(), w = world.rank();
  const int G = n_micro * N, first = w * n_micro;
  // Each part is cut into N slices of padded / N. Rank q keeps slice position * R + replica of
  // every part, its place in the part's groups (fsdp/part_layout.hpp): the R slices of its
  // position are then held by the part's replicate group in replicate-rank order, so one
  // all-gather there assembles its shard of the part (ddp: S = 1, the world; zero1/2/3 with one
  // part: R = 1, the slice is the shard). A unit's block for rank q is its parts' slices in order.
  const auto kept_slice = [&](const PartShard& ps, int q) {
    const PartRank r = part_rank(setup_, ps.part.placement, q);
    return std::int64_t(r.position) * ps.part.replicate_group + r.replica;
  };
  std::vector<std::vector<TreeNode>> covers;
  for (int p = 0; p < N; ++p) covers.push_back(canonical_cover(G, p * n_micro, (p + 1) * n_micro));
  const int rounds = max_cover(G, N);
  // got[u][k]: this rank's slice of node k of every rank, rank p's at p * slice.
  std::vector<std::vector<TrackedBuffer>> got(units.size());
  // Every micro-batch first, then the exchange: a micro-batch's forward and backward hold
  // collectives of their own (the gathers), which must line up across ranks whose nodes differ.
  std::vector<GradSet> nodes;
  for (const TreeNode& t : covers[std::size_t(w)])
    nodes.push_back(tree_accumulate(t.lo - first, t.hi - first, load, losses));
  GradSet none;
  for (int k = 0; k < rounds; ++k) {
    const bool real = k < int(nodes.size());
    GradSet& node = real ? nodes[std::size_t(k)] : none;
    for (std::size_t u = 0; u < units.size(); ++u) {
      ShardedUnit& su = units[u];
      if (!su.trains()) continue;  // frozen on every rank: nothing to exchange
      // The trained parts (from grad_base on), each padded to N slices.
      const std::int64_t slice = su.grad_numel() / N;
      // Block q of what this rank sends is the slices rank q keeps.
      TrackedBuffer send(tracker_, su.layout->name + "::tree_send", su.grad_numel(),
                         MemCategory::CommBuffers, MemSpace::Device, Dtype::F32,
                         real ? Fill::None : Fill::Zero);  // a round this rank has no node for
      if (real) {
        for (int q = 0; q < N && !counted_; ++q) {  // the planner's run copies nothing
          std::int64_t at = std::int64_t(q) * slice;
          for (const PartShard& ps : su.parts) {
            if (!ps.part.trainable) continue;
            const std::int64_t part_slice = ps.part.padded / N;
            Kokkos::deep_copy(send.vec(at, part_slice),
                              node[u].vec(ps.part.base - su.grad_base + kept_slice(ps, q) * part_slice,
                                          part_slice));
            at += part_slice;
          }
        }
        node[u].reset();
      }
      got[u].emplace_back(tracker_, su.layout->name + "::tree_recv", su.grad_numel(),
                          MemCategory::CommBuffers, MemSpace::Device, Dtype::F32, Fill::None);
      FSDP_COMM_SITE("deterministic all_to_all " + su.layout->name);
      world.all_to_all(send.wire(), got[u].back().wire());
    }
  }
  for (std::size_t u = 0; u < units.size(); ++u) {
    ShardedUnit& su = units[u];
    if (!su.trains()) continue;
    const std::int64_t slice = su.grad_numel() / N;
    // Node values live at their owner's block of the round's buffer: view them there.
    std::vector<Vec> views;
    const auto block = [&](int lo, int hi) -> Vec* {
      for (int p = 0; p < N; ++p) {
        const auto& c = covers[std::size_t(p)];
        for (std::size_t k = 0; k < c.size(); ++k)
          if (c[k] == TreeNode{lo, hi}) {
            views.push_back(got[u][k].vec(std::int64_t(p) * slice, slice));
            return &views.back();
          }
      }
      return nullptr;
    };
    views.reserve(std::size_t(N) * std::size_t(rounds));
    const bool counted = counted_;
    const Vec* sum = tree_combine<Vec>(0, G, block, [counted](Vec* x, Vec* y) {
      if (!counted) add_into(*x, *y);
      return x;
    });
    if (!shards_grads(setup_.strategy) && !su.grad_full.allocated())
      su.grad_full =
          TrackedBuffer(tracker_, su.layout->name + "::grads", su.grad_numel(), MemCategory::Grads);
    const ShardVec dst = state_->grad_shard(int(u));
    // An offloaded gradient shard (fsdp.offload = params) is assembled on the device and goes
    // down whole.
    TrackedBuffer assembled;
    if (dst.in_host_memory())
      assembled = TrackedBuffer(tracker_, su.layout->name + "::tree_shard", dst.size(),
                                MemCategory::CommBuffers, MemSpace::Device, Dtype::F32, Fill::None);
    const Vec out = dst.in_host_memory() ? assembled.vec() : dst.device();
    std::int64_t at = 0;  // the part's slice in the combined block
    for (const PartShard& ps : su.parts) {
      if (!ps.part.trainable) continue;
      const std::int64_t part_slice = ps.part.padded / N;
      const Vec part_out(out.data() + ps.shard_offset - su.train_offset, ps.shard);
      const ConstVec part_sum(sum->data() + at, part_slice);
      at += part_slice;
      if (ps.part.replicate_group == 1) {
        if (!counted_) divide_into(part_out, part_sum, float(G));
        continue;
      }
      TrackedBuffer mine(tracker_, su.layout->name + "::tree_slice", part_slice,
                         MemCategory::CommBuffers, MemSpace::Device, Dtype::F32, Fill::None);
      if (!counted_) divide_into(mine.vec(), part_sum, float(G));
      FSDP_COMM_SITE("deterministic all_gather " + su.layout->name);
      // Sized from the buffer, not its view: a counting tracker's views are empty.
      ps.replicate_comm->all_gather(ConstVec(mine.data(), mine.size()), part_out);
    }
    if (dst.in_host_memory()) {
      host_copy::to_host(dst.host(), assembled.cvec());
      host_copy::count_copy(tracker_, Transfer::DeviceToHost, 4.0 * double(dst.size()));
      host_copy::wait_copies(tracker_);
    }
    got[u].clear();
    if (shards_grads(setup_.strategy)) su.grad_full.reset();
  }
  if (!counted_) ExecSpace().fence();
}

double Engine::deterministic_norm2() {
  // Block b of a unit's part covers its flat elements [b*B, (b+1)*B); the count uses numel, not
  // the (rank-count dependent) padding, and padding blocks would only add zeros anyway. Blocks
  // are listed unit by unit, part by part.
  const std::vector<ShardedUnit>& units = state_->units();
  std::int64_t nblocks = 0;
  for (const auto& su : units)
    for (const PartShard& ps : su.parts)
      if (ps.part.trainable) nblocks += (ps.part.numel + kNormBlock - 1) / kNormBlock;
  std::vector<double> partial(nblocks, 0.0);
  // Per placement: its blocks' positions in `partial`, and the shard group that holds them once.
  std::vector<std::vector<std::int64_t>> at;
  std::vector<comm::Communicator*> comms;
  std::int64_t first_block = 0;
  for (std::size_t u = 0; u < units.size(); ++u) {
    if (!units[u].trains()) continue;  // frozen: no gradient
    const ShardVec g = state_->grad_shard(int(u));
    for (const PartShard& ps : units[u].parts) {
      if (!ps.part.trainable) continue;
      const std::int64_t count = (ps.part.numel + kNormBlock - 1) / kNormBlock;
      const std::int64_t b0 = ps.shard_begin / kNormBlock;
      const std::int64_t owned =
          std::max<std::int64_t>(0, std::min(ps.shard / kNormBlock, count - b0));
      const std::size_t p = std::size_t(ps.part.placement);
      if (at.size() <= p) {
        at.resize(p + 1);
        comms.resize(p + 1, nullptr);
      }
      comms[p] = ps.shard_comm;
      for (std::int64_t b = 0; b < count; ++b) at[p].push_back(first_block + b);
      double* out = partial.data() + first_block + b0;
      first_block += count;
      const ShardVec mine = g.sub(ps.shard_offset - units[u].train_offset, ps.shard);
      if (counted_) continue;  // the planner's run: buffers counted, nothing summed
      if (mine.in_host_memory())
        block_sums<HostExecSpace, PinnedSpace>(ConstPinnedVec(mine.host()), owned, out);
      else
        block_sums<ExecSpace, DeviceSpace>(ConstVec(mine.device()), owned, out);
    }
  }
  // Every block has one owner in its placement's shard group and zeros elsewhere there: the
  // rank-ordered sum is exact.
  for (std::size_t p = 0; p < comms.size(); ++p) {
    if (!comms[p] || comms[p]->size() == 1) continue;
    if (at[p].size() == partial.size()) {  // one placement: the blocks as they are
      comms[p]->all_reduce_sum(partial.data(), int(partial.size()));
      continue;
    }
    std::vector<double> mine;
    for (std::int64_t i : at[p]) mine.push_back(partial[std::size_t(i)]);
    comms[p]->all_reduce_sum(mine.data(), int(mine.size()));
    for (std::size_t i = 0; i < mine.size(); ++i) partial[std::size_t(at[p][i])] = mine[i];
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

double Engine::deterministic_loss(const std::vector<double>& local, int n_micro) {
  comm::Communicator& world = mesh_.world();
  std::vector<double> all(std::size_t(n_micro) * world.size(), 0.0);
  for (int j = 0; j < n_micro; ++j) all[std::size_t(world.rank()) * n_micro + j] = local[j];
  world.all_reduce_sum(all.data(), int(all.size()));  // one owner per slot: exact
  return tree_sum(all, 0, all.size()) / double(all.size());
}

}  // namespace fsdp
