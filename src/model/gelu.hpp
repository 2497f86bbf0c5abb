// SPDX-License-Identifier: MIT
// GELU with the tanh approximation (GPT-2's "gelu_new"), elementwise over n values.
// Backward assigns dx (=).
// gelu(x) = x * 0.5 * (1 + tanh(u)) with u = sqrt(2/pi) * (x + 0.044715 x^3), evaluated as the
// identical x * s with s = 1 / (1 + e^-2u): one exp and a division instead of a tanh, and no
// cancellation in 1 + tanh(u) for negative x. -2u is clamped to [-80, 80]: e^80 keeps s a normal
// float (denormals are slow on x86) and gelu is below 1e-33 there anyway; e^-80 leaves 1 + e
// exactly 1.
#pragma once
#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::kernels {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

namespace detail {
KOKKOS_INLINE_FUNCTION float gelu_exp_neg_2u(float x) {
  const float m2u = -2.f * kGeluScale * (x + 0.044715f * x * x * x);
  return kmath::exp_fast_in_range(
      kmath::select(m2u < -80.f, -80.f, kmath::select(m2u > 80.f, 80.f, m2u)));
}
}  // namespace detail

inline void gelu_forward(const Vec& out, const ConstVec& x) {
  Kokkos::parallel_for(
      "gelu::forward", Kokkos::RangePolicy<ExecSpace>(0, x.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) {
        const float v = x(i);
        out(i) = v / (1.f + detail::gelu_exp_neg_2u(v));
      });
}

// The same after adding a bias (width C, broadcast over rows) to x in place: x keeps the
// pre-activation for backward, and the bias costs no pass of its own (linear_forward_no_bias).
inline void gelu_bias_forward(const Vec& out, const Vec& x, const ConstVec& bias) {
  const int64_t C = bias.extent(0), rows = x.extent(0) / C;
  Kokkos::parallel_for(
      "gelu::bias_forward", Kokkos::RangePolicy<ExecSpace>(0, rows),
      KOKKOS_LAMBDA(const int64_t r) {
        const int64_t o = r * C;
        for (int64_t c = 0; c < C; ++c) {
          const float v = x(o + c) + bias(c);
          x(o + c) = v;
          out(o + c) = v / (1.f + detail::gelu_exp_neg_2u(v));
        }
      });
}

// d gelu / dx = s + 2 x s (1 - s) du/dx, with 1 - s = e s (no cancellation as s -> 1).
inline void gelu_backward(const Vec& dx, const ConstVec& x, const ConstVec& dout) {
  Kokkos::parallel_for(
      "gelu::backward", Kokkos::RangePolicy<ExecSpace>(0, x.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) {
        const float v = x(i);
        const float e = detail::gelu_exp_neg_2u(v);
        const float s = 1.f / (1.f + e);
        const float du = kGeluScale * (1.f + 3.f * 0.044715f * v * v);
        dx(i) = dout(i) * (s * (1.f + 2.f * v * e * s * du));
      });
}

}  // namespace fsdp::kernels
