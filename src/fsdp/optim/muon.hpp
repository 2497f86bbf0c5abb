// SPDX-License-Identifier: MIT
// Muon's elementwise halves (Keller Jordan et al. 2024; the conventions of PyTorch's
// torch.optim.Muon): the momentum before the orthogonalisation and the parameter update after
// it, each on one contiguous run of one matrix's elements. The Newton-Schulz iteration between
// them needs the whole matrix (fsdp/optim/newton_schulz.hpp, fsdp/optim/muon_exchange.hpp).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/types.hpp"

namespace fsdp::optim {

struct MuonStep {
  float momentum = 0.95f;
  bool nesterov = true;
  float grad_scale = 1.f;  // clipping, as AdamW's
  float lr = 0.f;          // this step's Muon learning rate (train.lr's schedule, or muon.lr's)
  float weight_decay = 0.f;
};

// scale = match_adamw: 0.2 sqrt(max(out, in)), the RMS of AdamW's update (Moonlight); original:
// sqrt(max(1, out / in)).
inline double muon_scale(bool match_adamw, std::int64_t out, std::int64_t in) {
  if (match_adamw) return 0.2 * std::sqrt(double(std::max(out, in)));
  return std::sqrt(std::max(1.0, double(out) / double(in)));
}

// buf = momentum * buf + (1 - momentum) * g (PyTorch's buf.lerp_(g, 1 - momentum)); g becomes
// what Newton-Schulz orthogonalises: (1 - momentum) g + momentum buf with Nesterov, else buf.
template <class Exec, class V>
void muon_momentum_in(const V& g, const V& buf, const MuonStep& s) {
  const float mu = s.momentum, scale = s.grad_scale;
  const bool nesterov = s.nesterov;
  Kokkos::parallel_for(
      "muon::momentum", Kokkos::RangePolicy<Exec>(0, g.extent(0)), KOKKOS_LAMBDA(const int64_t i) {
        const float gi = g(i) * scale;
        const float b = mu * buf(i) + (1.f - mu) * gi;
        buf(i) = b;
        g(i) = nesterov ? (1.f - mu) * gi + mu * b : b;
      });
}

// p = p (1 - lr wd) - lr scale o, o the orthogonalised update (PyTorch: param.mul_(1 - lr wd),
// then param.add_(o, alpha = -adjusted lr)). zero_grad: o was the gradient buffer; leave it 0.
template <class Exec, class V>
void muon_apply_in(const V& p, const V& o, float lr, float scale, float weight_decay, bool decay,
                   bool zero_grad) {
  const float keep = 1.f - lr * (decay ? weight_decay : 0.f), step = lr * scale;
  Kokkos::parallel_for(
      "muon::apply", Kokkos::RangePolicy<Exec>(0, p.extent(0)), KOKKOS_LAMBDA(const int64_t i) {
        p(i) = p(i) * keep - step * o(i);
        if (zero_grad) o(i) = 0.f;
      });
}

}  // namespace fsdp::optim
