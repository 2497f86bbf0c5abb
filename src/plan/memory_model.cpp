// SPDX-License-Identifier: MIT
#include "plan/memory_model.hpp"

#include "model/model_keys.hpp"

#include "core/offload_file.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "fsdp/canonical_tree.hpp"
#include "fsdp/part_layout.hpp"
#include "model/architecture.hpp"
#include "plan/counted_step.hpp"
#include "plan/gpu_bf16_memory.hpp"

namespace fsdp::plan {

std::vector<std::int64_t> unit_numels(const ModelConfig& s, const ModelChoices& c) {
  std::vector<std::int64_t> u;
  for (const UnitLayout& l : model_units(s, c)) u.push_back(l.numel);
  return u;
}

ModelConfig family_shape(int n_layer, const ModelConfig& like, double aspect, int head_dim) {
  const int layers = std::max(1, n_layer);
  const long k = std::max(1L, std::lround(aspect * layers / head_dim));
  return resized_model(like, layers, int(k), head_dim);
}

ModelConfig shape_for_params(double params, const ModelConfig& like, double aspect, int head_dim) {
  ModelConfig best = family_shape(1, like, aspect, head_dim);
  double best_err = std::fabs(double(num_params(best)) - params);
  for (int L = 2; L <= 4096; ++L) {
    const ModelConfig s = family_shape(L, like, aspect, head_dim);
    const double n = double(num_params(s));
    const double err = std::fabs(n - params);
    if (err < best_err) {
      best = s;
      best_err = err;
    }
    if (n > 2.0 * params) break;
  }
  return best;
}

ElementBytes element_bytes(const Setup& s) {
  ElementBytes b;
  if (s.precision == Precision::BF16) {
    b.param = 2;
    b.master = 4;
    b.grad = s.reduce_bf16 ? 2 : 4;
    b.activation = 2;
  }
  return b;
}

std::int64_t activation_elements(const ModelConfig& s, const ModelChoices& c, int micro_batch) {
  return architecture_of(s).activation_elements(s, c, micro_batch);
}

MemoryPlan plan_memory(const Setup& s) {
  MemoryPlan mp;
  mp.shard_group = s.shard_group();
  std::vector<std::int64_t> shards;  // nvme: the offload file holds regions of these
  const RunLayout layout = place_units(s, model_units(s.model, s.choices));  // each unit's parts
  for (int u = 0; u < int(layout.units.size()); ++u) {
    const std::int64_t padded = layout.padded(u);
    mp.params += layout.units[std::size_t(u)].numel;
    mp.padded_params += layout.whole(u);
    mp.largest_unit = std::max(mp.largest_unit, padded);
    shards.push_back(layout.shard(u));
  }
  mp.disk_bytes = offload_file_bytes(shards, s.offload_regions());
  // MemoryTracker::on_alloc / on_free: per (space, category) and per-space totals. Deterministic
  // mode's buffers depend on the rank (its share of the summation tree): the plan is the most
  // any rank needs, per category and in total, over the ranks whose shares differ in shape.
  // Muon's packed second moments and the matrices a rank owns depend on its position in each
  // placement's shard group (fsdp/optim/optimizer_layout.hpp, fsdp/optim/muon_owners.hpp): likewise.
  std::vector<int> ranks{0};
  if (s.deterministic || s.muon_optimizer()) {
    ranks.clear();
    const int m = s.micro_batches(), G = m * s.ranks;
    std::vector<std::vector<int>> shapes;
    for (int r = 0; r < s.ranks; ++r) {
      std::vector<int> shape;
      if (s.deterministic)
        for (const TreeNode& t : canonical_cover(G, r * m, (r + 1) * m)) shape.push_back(t.hi - t.lo);
      shape.push_back(-1);
      if (s.muon_optimizer())
        for (int p = 0; p < int(s.placements.size()); ++p) shape.push_back(part_rank(s, p, r).position);
      if (std::find(shapes.begin(), shapes.end(), shape) != shapes.end()) continue;
      shapes.push_back(shape);
      ranks.push_back(r);
    }
  }
  for (int r : ranks) {
    // Micro-batches after the second repeat the second's allocations, except under
    // deterministic mode, whose summation tree deepens with their number.
    const int micro = s.deterministic ? 0 : 3;
    std::array<std::array<std::int64_t, kNumMemCategories>, 2> peak{};
    std::array<std::int64_t, 2> total_peak{};
    if (s.precision == Precision::BF16) {
      const TrackerPeaks p = gpu_bf16_peaks(s, micro, r);
      peak = p.peak;
      total_peak = p.total;
    } else {
      const CountedStep c = count_step(s, r, micro);
      for (int sp = 0; sp < 2; ++sp) {
        for (int ci = 0; ci < kNumMemCategories; ++ci)
          peak[sp][ci] = c.tracker.peak(MemCategory(ci), MemSpace(sp));
        total_peak[sp] = c.tracker.peak_total(MemSpace(sp));
      }
    }
    for (int sp = 0; sp < 2; ++sp) {
      for (int ci = 0; ci < kNumMemCategories; ++ci)
        mp.peak[sp][ci] = std::max(mp.peak[sp][ci], peak[sp][ci]);
      mp.peak_total[sp] = std::max(mp.peak_total[sp], total_peak[sp]);
    }
  }
  return mp;
}

double zero_model_state_bytes(double psi, int n, Strategy s, const ModelStateBytes& b) {
  const double N = n;
  switch (s) {
    case Strategy::DDP: return (b.param + b.grad + b.optimizer_k) * psi;
    case Strategy::Zero1: return (b.param + b.grad) * psi + b.optimizer_k * psi / N;
    case Strategy::Zero2: return b.param * psi + (b.grad + b.optimizer_k) * psi / N;
    case Strategy::Zero3:
    case Strategy::Hybrid: return (b.param + b.grad + b.optimizer_k) * psi / N;
  }
  return 0.0;
}

LargestModel largest_model(const Setup& base, std::int64_t device_budget, double aspect,
                           int head_dim, int max_layers) {
  auto at = [&](int L) {
    Setup s = base;
    s.model = family_shape(L, base.model, aspect, head_dim);
    return std::make_pair(s.model, plan_memory(s));
  };
  auto fits = [&](const MemoryPlan& m) { return m.device_total() <= device_budget; };
  LargestModel r;
  auto [s1, m1] = at(1);
  if (!fits(m1)) {
    r.next_shape = s1;
    r.next_device_total = m1.device_total();
    return r;
  }
  // The device peak grows with depth (and width along the family): double, then bisect.
  int lo = 1, hi = 2;
  while (hi <= max_layers && fits(at(hi).second)) {
    lo = hi;
    hi *= 2;
  }
  hi = std::min(hi, max_layers + 1);
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (fits(at(mid).second)) lo = mid;
    else hi = mid;
  }
  auto [shape, mem] = at(lo);
  r.found = true;
  r.shape = shape;
  r.params = num_params(shape);
  r.memory = mem;
  if (hi <= max_layers) {
    auto [ns, nm] = at(hi);
    r.next_shape = ns;
    r.next_device_total = nm.device_total();
  }
  return r;
}

}  // namespace fsdp::plan
