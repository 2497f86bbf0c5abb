// SPDX-License-Identifier: MIT
// SwiGLU's gate (Llama's MLP): h = silu(g) * u with silu(g) = g * sigmoid(g), where g and u are
// the two halves of one GEMM's output gu [N, 2F] (gate_proj and up_proj stored next to each
// other, so one GEMM reads x once for both). Backward assigns dgu (=):
//   dg = dh * u * s * (1 + g * (1 - s)),  du = dh * g * s,  s = sigmoid(g).
#pragma once
#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::kernels {

namespace detail {
// sigmoid with the exponent clamped: e^80 keeps 1 + e a normal float, and the result is 0 or 1
// to float precision beyond that anyway. Branch-free (select), so the loops vectorize.
KOKKOS_INLINE_FUNCTION float sigmoid(float g) {
  const float e = kmath::select(g > 80.f, -80.f, kmath::select(g < -80.f, 80.f, -g));
  return 1.f / (1.f + kmath::exp_fast_in_range(e));
}
}  // namespace detail

inline void swiglu_forward(const Mat& h, const ConstMat& gu) {
  const int N = h.extent(0), F = h.extent(1);
  Kokkos::parallel_for(
      "swiglu::forward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        const float* g = &gu(i, 0);
        const float* u = g + F;
        float* hi = &h(i, 0);
        for (int f = 0; f < F; ++f) hi[f] = g[f] * detail::sigmoid(g[f]) * u[f];
      });
}

inline void swiglu_backward(const Mat& dgu, const ConstMat& dh, const ConstMat& gu) {
  const int N = dh.extent(0), F = dh.extent(1);
  Kokkos::parallel_for(
      "swiglu::backward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        const float* g = &gu(i, 0);
        const float* u = g + F;
        const float* d = &dh(i, 0);
        float* dg = &dgu(i, 0);
        float* du = dg + F;
        for (int f = 0; f < F; ++f) {
          const float s = detail::sigmoid(g[f]);
          dg[f] = d[f] * u[f] * s * (1.f + g[f] * (1.f - s));
          du[f] = d[f] * g[f] * s;
        }
      });
}

}  // namespace fsdp::kernels
