// SPDX-License-Identifier: MIT
// AdamW (decoupled weight decay, bias correction) on one contiguous slice of a flat shard.
// Decay applies to 2-D weights only; the engine calls this once per tensor segment.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::optim {

struct AdamWStep {
  float lr, beta1, beta2, eps, weight_decay;
  int t;             // 1-based step count, for bias correction
  float grad_scale;  // clipping factor applied to the gradient
};

// One element's update; returns the new parameter.
KOKKOS_INLINE_FUNCTION float adamw_element(float p, float grad, float& m, float& v, float b1,
                                           float b2, float c1, float c2, float eps, float lr,
                                           float wd) {
  const float mi = b1 * m + (1.f - b1) * grad;
  const float vi = b2 * v + (1.f - b2) * grad * grad;
  m = mi;
  v = vi;
  // sqrt_fast: with libm's sqrt (errno) this loop runs one element at a time.
  return p - lr * ((mi * c1) / (kmath::sqrt_fast(vi * c2) + eps) + wd * p);
}

// zero_grad: also leave g zeroed for the next step's accumulation. Writing the zeros while the
// line is in cache from the read saves a separate fill pass over the gradients (a full read for
// ownership and write-back of them). Exec and the views' space go together: the device with
// Vec, the host execution space with the offloaded PinnedVec (fsdp.offload).
template <class Exec, class V>
void adamw_update_in(const V& p, const V& g, const V& m, const V& v, const AdamWStep& s,
                     bool decay, bool zero_grad) {
  const float b1 = s.beta1, b2 = s.beta2, eps = s.eps, lr = s.lr, scale = s.grad_scale;
  const float wd = decay ? s.weight_decay : 0.f;
  const float c1 = 1.f / (1.f - std::pow(b1, static_cast<float>(s.t)));
  const float c2 = 1.f / (1.f - std::pow(b2, static_cast<float>(s.t)));
  const Kokkos::RangePolicy<Exec> all(0, p.extent(0));
  if (zero_grad)
    Kokkos::parallel_for(
        "adamw::update", all, KOKKOS_LAMBDA(const int64_t i) {
          p(i) = adamw_element(p(i), g(i) * scale, m(i), v(i), b1, b2, c1, c2, eps, lr, wd);
          g(i) = 0.f;
        });
  else
    Kokkos::parallel_for(
        "adamw::update", all, KOKKOS_LAMBDA(const int64_t i) {
          p(i) = adamw_element(p(i), g(i) * scale, m(i), v(i), b1, b2, c1, c2, eps, lr, wd);
        });
}

inline void adamw_update(const Vec& p, const Vec& g, const Vec& m, const Vec& v,
                         const AdamWStep& s, bool decay, bool zero_grad) {
  adamw_update_in<ExecSpace>(p, g, m, v, s, decay, zero_grad);
}

// Sum of squares in double, in a fixed order: the partial the global norm is built from.
// Chunks of 4096 values, each summed in lanes, are combined by the reduction (in chunk order on
// the host backends).
template <class Exec, class V>
double sum_squares_in(const V& g) {
  constexpr std::int64_t chunk = 4096;
  const std::int64_t n = g.extent(0);
  double s = 0.0;
  Kokkos::parallel_reduce(
      "adamw::sum_squares", Kokkos::RangePolicy<Exec>(0, (n + chunk - 1) / chunk),
      KOKKOS_LAMBDA(const int64_t c, double& acc) {
        const std::int64_t b = c * chunk;
        const int len = static_cast<int>(n - b < chunk ? n - b : chunk);
        acc += kmath::lane_sum_double(len, [&](int i) {
          const double x = g(b + i);
          return x * x;
        });
      },
      s);
  return s;
}

inline double sum_squares(const ConstVec& g) { return sum_squares_in<ExecSpace>(g); }

}  // namespace fsdp::optim
