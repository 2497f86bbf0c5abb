// SPDX-License-Identifier: MIT
// Deterministic mode: per-step losses, gradient norms and parameters bitwise identical on 1 or
// any power-of-two number of ranks (that divides the step's micro-batch count M).
//  - Each micro-batch's gradient is computed into zeroed buffers (dloss = 1, no 1/M scaling yet),
//    so it is the same computation wherever it runs.
//  - The M gradients are summed along one canonical tree: sum(lo, hi) = sum(lo, mid) +
//    sum(mid, hi), mid = lo + (hi - lo) / 2. Rank r holds micro-batches [r M/N, (r+1) M/N), a
//    subtree, and sums it locally; the ranks' partial sums are combined along the tree's upper
//    levels (pairwise, lower rank on the left), then divided by M.
//  - The gradient norm is a fixed-order sum of partial sums over 1024-element blocks of each
//    unit's flat gradient; units are padded to whole blocks per shard so no block straddles ranks.
//  - The step loss is the same tree over the M micro-batch losses.
// The price: log2(M/N)+1 sets of full gradients and an all-gather of full gradients per unit.
#include <cmath>

#include "fsdp/engine.hpp"

namespace fsdp {
namespace {

void add_into(const Vec& a, const ConstVec& b) {
  Kokkos::parallel_for(
      "deterministic::tree_add", Kokkos::RangePolicy<ExecSpace>(0, a.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { a(i) += b(i); });
}

// A division, not a multiply by 1/d: the mean must be the same bits as the non-tree path's.
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
    for (auto& su : units)
      su.grad_full = TrackedBuffer(tracker_, su.layout->name + "::grads", su.padded,
                                   MemCategory::Grads);
    losses.push_back(micro_batch(lo, load, 1.f, /*reduce_last=*/false));
    GradSet leaf;
    for (auto& su : units) leaf.push_back(std::move(su.grad_full));
    return leaf;
  }
  const int mid = lo + (hi - lo) / 2;
  GradSet left = tree_accumulate(lo, mid, load, losses);
  GradSet right = tree_accumulate(mid, hi, load, losses);
  for (std::size_t u = 0; u < left.size(); ++u) add_into(left[u].vec(), right[u].cvec());
  return left;
}

void Engine::tree_reduce_grads(int global_micro) {
  comm::Communicator& world = *groups_.world;
  const int D = world.size();
  const float inv_scale = float(global_micro);
  const Strategy strategy = setup_.strategy;
  for (int u = 0; u < int(state_->units().size()); ++u) {
    ShardedUnit& su = state_->units()[std::size_t(u)];
    // Everyone's local subtree sum, then the upper tree levels on the range this rank keeps.
    TrackedBuffer all(tracker_, su.layout->name + "::tree_gather", std::int64_t(D) * su.padded,
                      MemCategory::CommBuffers);
    world.all_gather(su.grad_full.cvec(), all.vec());
    const std::int64_t begin = strategy == Strategy::DDP ? 0 : su.shard_begin;
    const std::int64_t n = strategy == Strategy::DDP ? su.padded : su.shard;
    float* base = all.data();
    const std::int64_t stride = su.padded;
    for (int width = 1; width < D; width *= 2)
      for (int r = 0; r + width < D; r += 2 * width)
        add_into(Vec(base + std::int64_t(r) * stride + begin, n),
                 ConstVec(base + std::int64_t(r + width) * stride + begin, n));
    const Vec dst = state_->grad_shard(u);
    const ConstVec src(base + begin, n);
    divide_into(dst, src, inv_scale);
    if (shards_grads(strategy)) su.grad_full.reset();
  }
  ExecSpace().fence();
}

double Engine::deterministic_norm2() {
  // Block b of unit u covers flat elements [b*B, (b+1)*B); the count uses numel, not the
  // (rank-count dependent) padding, and padding blocks would only add zeros anyway.
  std::vector<std::int64_t> first_block;
  std::int64_t nblocks = 0;
  const std::vector<ShardedUnit>& units = state_->units();
  for (const auto& su : units) {
    first_block.push_back(nblocks);
    nblocks += (su.numel + kNormBlock - 1) / kNormBlock;
  }
  std::vector<double> partial(nblocks, 0.0);
  for (std::size_t u = 0; u < units.size(); ++u) {
    const auto& su = units[u];
    const Vec g = state_->grad_shard(int(u));
    auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), g);
    const std::int64_t b0 = su.shard_begin / kNormBlock;
    const std::int64_t owned = su.shard / kNormBlock;
    const std::int64_t count = (su.numel + kNormBlock - 1) / kNormBlock;
    for (std::int64_t b = 0; b < owned && b0 + b < count; ++b) {
      double s = 0.0;
      for (std::int64_t i = b * kNormBlock; i < (b + 1) * kNormBlock; ++i)
        s += double(host(i)) * double(host(i));
      partial[first_block[u] + b0 + b] = s;
    }
  }
  // Every block has one owner and zeros elsewhere: the rank-ordered sum is exact.
  if (state_->shard_group_size() > 1)
    state_->shard_comm().all_reduce_sum(partial.data(), int(partial.size()));
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

double Engine::deterministic_loss(const std::vector<double>& local, int n_micro) {
  comm::Communicator& world = *groups_.world;
  std::vector<double> all(std::size_t(n_micro) * world.size(), 0.0);
  for (int j = 0; j < n_micro; ++j) all[std::size_t(world.rank()) * n_micro + j] = local[j];
  world.all_reduce_sum(all.data(), int(all.size()));  // one owner per slot: exact
  return tree_sum(all, 0, all.size()) / double(all.size());
}

}  // namespace fsdp
