// SPDX-License-Identifier: MIT
#include "fsdp/stage_costs.hpp"

#include "model/experts/capacity.hpp"

namespace fsdp {

StageCosts stage_costs(const RunSetup& s, const RunLayout& layout, const Decoder& model) {
  const ModelConfig& m = s.model;
  StageCosts c;
  const std::vector<UnitFlops> flops = model.unit_flops();
  c.head.flops = model.head_flops();
  const int P = s.choices.expert_slices();
  const double share = double(P - 1) / P;
  const double bytes = s.bf16_gemms && kernels::bf16_dispatch(P, m.n_embd) ? 3.0 : 4.0;
  for (std::size_t u = 0; u < layout.units.size(); ++u) {
    StageCost sc;
    sc.flops = flops[u];
    double experts = 0.0, expert_numel = 0.0;
    for (const TensorSpec& t : layout.units[u].tensors)
      if (s.placements[std::size_t(t.part)].by_expert) {
        experts += 1.0;
        expert_numel += double(t.numel);
      }
    // Each sparse layer holds three matrices per expert.
    const double layers = m.n_experts > 0 ? experts / (3.0 * m.n_experts) : 0.0;
    if (P > 1) {
      sc.exchange = bytes * layers * share * double(s.micro_batch) * m.block_size *
                    m.experts_per_token * m.n_embd;
      if (s.choices.moe.grads_home) sc.grads_home = 4.0 * share * expert_numel;
    }
    c.units.push_back(sc);
  }
  return c;
}

}  // namespace fsdp
