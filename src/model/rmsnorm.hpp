// SPDX-License-Identifier: MIT
// RMSNorm over channels (Llama): out = x * rsqrt(mean(x^2) + eps) * w, no mean subtracted and
// no bias. N = rows (B*T), C = channels. Forward saves rstd per row; backward assigns dx (=) and
// accumulates dw (+=). With r = rstd and g = dout * w:
//   dx = r * (g - x * r^2 * mean(g * x)),   dw += sum over rows of dout * x * r.
#pragma once
#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::kernels {

inline void rmsnorm_forward(const Mat& out, const Vec& rstd, const ConstMat& x, const ConstVec& w,
                            float eps) {
  const int N = x.extent(0), C = x.extent(1);
  Kokkos::parallel_for(
      "rmsnorm::forward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        const float* xi = &x(i, 0);
        const float ms = kmath::lane_sum(C, [&](int c) { return xi[c] * xi[c]; }) / C;
        const float r = 1.f / kmath::sqrt(ms + eps);
        float* o = &out(i, 0);
        for (int c = 0; c < C; ++c) o[c] = xi[c] * r * w(c);
        rstd(i) = r;
      });
}

// Channels per thread in the weight gradient: partial sums stay in registers, rows in order
// (deterministic without atomics), each row's block a contiguous read.
constexpr int kRmsNormChannelBlock = 32;

inline void rmsnorm_backward(const Mat& dx, const Vec& dw, const ConstMat& dout, const ConstMat& x,
                             const ConstVec& w, const ConstVec& rstd) {
  const int N = x.extent(0), C = x.extent(1);
  Kokkos::parallel_for(
      "rmsnorm::backward_input", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        const float r = rstd(i);
        const float* xi = &x(i, 0);
        const float* gi = &dout(i, 0);
        const float mean_gx = kmath::lane_sum(C, [&](int c) { return gi[c] * w(c) * xi[c]; }) / C;
        const float k = r * r * mean_gx;
        float* dxi = &dx(i, 0);
        for (int c = 0; c < C; ++c) dxi[c] = r * (gi[c] * w(c) - xi[c] * k);
      });
  if (dw.extent(0) == 0) return;  // a frozen weight (an adapter run's base): dx only
  constexpr int CB = kRmsNormChannelBlock;
  Kokkos::parallel_for(
      "rmsnorm::backward_weight", Kokkos::RangePolicy<ExecSpace>(0, (C + CB - 1) / CB),
      KOKKOS_LAMBDA(const int blk) {
        const int c0 = blk * CB, nc = C - c0 < CB ? C - c0 : CB;
        float gw[CB] = {};
        for (int i = 0; i < N; ++i) {
          const float r = rstd(i);
          const float* gi = &dout(i, c0);
          const float* xi = &x(i, c0);
          for (int c = 0; c < nc; ++c) gw[c] += gi[c] * (xi[c] * r);
        }
        for (int c = 0; c < nc; ++c) dw(c0 + c) += gw[c];
      });
}

}  // namespace fsdp::kernels
