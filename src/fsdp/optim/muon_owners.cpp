// SPDX-License-Identifier: MIT
#include "fsdp/optim/muon_owners.hpp"

#include <algorithm>
#include <numeric>

#include "fsdp/optim/newton_schulz.hpp"

namespace fsdp {

MuonOwners muon_owners(const RunLayout& layout, int ns_steps) {
  MuonOwners o;
  o.owner.resize(layout.parts.size());
  struct Job {
    int i;
    double cost;
  };
  for (std::size_t u = 0; u < layout.parts.size(); ++u) {
    o.owner[u].resize(layout.parts[u].size());
    for (std::size_t k = 0; k < layout.parts[u].size(); ++k) {
      const std::vector<TensorSpec>& ts = layout.part_units[u][k].tensors;
      o.owner[u][k].assign(ts.size(), -1);
      const UnitPart& part = layout.parts[u][k];
      if (int(o.flops.size()) <= part.placement) o.flops.resize(std::size_t(part.placement) + 1);
      std::vector<double>& total = o.flops[std::size_t(part.placement)];
      const int Sg = part.shard_group, slices = part.slices;
      if (total.empty()) total.assign(std::size_t(Sg) * std::size_t(slices), 0.0);
      // A divided part: each slice's matrices among the positions holding that slice.
      for (int j = 0; j < slices; ++j) {
        // One round of the exchange (fsdp/optim/muon_exchange.hpp): its owners finish together, so the
        // round itself is balanced, longest job first; ties go to the position with the least
        // work so far (then the lowest), which evens the rounds' remainders out over the step.
        std::vector<Job> jobs;
        for (std::size_t i = 0; i < ts.size(); ++i)
          if (muon_matrix(ts[i]) && (slices == 1 || ts[i].offset / part.flat() == j))
            jobs.push_back({int(i), optim::newton_schulz_flops(ts[i].shape[0], ts[i].shape[1], ns_steps)});
        std::stable_sort(jobs.begin(), jobs.end(),
                         [](const Job& a, const Job& b) { return a.cost > b.cost; });
        std::vector<double> round(std::size_t(Sg), 0.0);
        const std::size_t first = std::size_t(j) * std::size_t(Sg);
        for (const Job& job : jobs) {
          std::size_t q = 0;
          for (std::size_t r = 1; r < round.size(); ++r)
            if (round[r] < round[q] || (round[r] == round[q] && total[first + r] < total[first + q])) q = r;
          round[q] += job.cost;
          total[first + q] += job.cost;
          o.owner[u][k][std::size_t(job.i)] = int(first + q);
        }
      }
    }
  }
  return o;
}

MuonBuffers muon_buffers(const RunLayout& layout, const MuonOwners& owners,
                         const std::vector<int>& positions, bool bf16) {
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
        b.work = std::max(b.work, optim::newton_schulz_workspace(t.shape[0], t.shape[1], bf16));
      }
      b.send = std::max(b.send, send);
      b.gathered = std::max(b.gathered, gathered);
    }
  return b;
}

}  // namespace fsdp
