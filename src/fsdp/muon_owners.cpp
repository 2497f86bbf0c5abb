// SPDX-License-Identifier: MIT
#include "fsdp/muon_owners.hpp"

#include <algorithm>
#include <numeric>

#include "optim/newton_schulz.hpp"

namespace fsdp {

MuonOwners muon_owners(const RunLayout& layout, int ns_steps) {
  MuonOwners o;
  struct Job {
    int u, k, i, placement;
    double cost;
  };
  std::vector<Job> jobs;
  int placements = 0;
  o.owner.resize(layout.parts.size());
  for (std::size_t u = 0; u < layout.parts.size(); ++u) {
    o.owner[u].resize(layout.parts[u].size());
    for (std::size_t k = 0; k < layout.parts[u].size(); ++k) {
      const std::vector<TensorSpec>& ts = layout.part_units[u][k].tensors;
      o.owner[u][k].assign(ts.size(), -1);
      const int p = layout.parts[u][k].placement;
      placements = std::max(placements, p + 1);
      for (std::size_t i = 0; i < ts.size(); ++i)
        if (muon_matrix(ts[i]))
          jobs.push_back({int(u), int(k), int(i), p,
                          optim::newton_schulz_flops(ts[i].shape[0], ts[i].shape[1], ns_steps)});
    }
  }
  // Longest first; equal costs keep model order (a stable sort), so every rank agrees.
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.cost > b.cost; });
  o.flops.assign(std::size_t(placements), {});
  for (const Job& j : jobs) {
    const int S = layout.parts[std::size_t(j.u)][std::size_t(j.k)].shard_group;
    std::vector<double>& load = o.flops[std::size_t(j.placement)];
    if (load.empty()) load.assign(std::size_t(S), 0.0);
    const int q = int(std::min_element(load.begin(), load.end()) - load.begin());
    load[std::size_t(q)] += j.cost;
    o.owner[std::size_t(j.u)][std::size_t(j.k)][std::size_t(j.i)] = q;
  }
  return o;
}

MuonBuffers muon_buffers(const RunLayout& layout, const MuonOwners& owners,
                         const std::vector<int>& positions) {
  MuonBuffers b;
  for (std::size_t u = 0; u < layout.parts.size(); ++u)
    for (std::size_t k = 0; k < layout.parts[u].size(); ++k) {
      const UnitPart& part = layout.parts[u][k];
      const int r = positions[std::size_t(part.placement)];
      const std::int64_t lo = r * part.shard(), hi = lo + part.shard();
      std::int64_t send = 0, gathered = 0;
      const std::vector<TensorSpec>& ts = layout.part_units[u][k].tensors;
      for (std::size_t i = 0; i < ts.size(); ++i) {
        const int q = owners.owner[u][k][i];
        if (q < 0) continue;
        const TensorSpec& t = ts[i];
        send += std::max<std::int64_t>(0, std::min(hi, t.offset + t.numel) - std::max(lo, t.offset));
        if (q != r) continue;
        gathered += t.numel;
        b.work = std::max(b.work, optim::newton_schulz_workspace(t.shape[0], t.shape[1]));
      }
      b.send = std::max(b.send, send);
      b.gathered = std::max(b.gathered, gathered);
    }
  return b;
}

}  // namespace fsdp
