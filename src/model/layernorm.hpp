// SPDX-License-Identifier: MIT
// LayerNorm over channels (eps 1e-5, biased variance, as PyTorch). N = rows (B*T), C = channels.
// Forward saves mean and rstd per row; backward assigns dx (=) and accumulates dw, db (+=).
#pragma once
#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::kernels {

constexpr float kLayerNormEps = 1e-5f;

inline void layernorm_forward(const Mat& out, const Vec& mean, const Vec& rstd, const ConstMat& x,
                              const ConstVec& w, const ConstVec& b) {
  const int N = x.extent(0), C = x.extent(1);
  Kokkos::parallel_for(
      "layernorm::forward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        const float* xi = &x(i, 0);
        const float m = kmath::lane_sum(C, [&](int c) { return xi[c]; }) / C;
        const float v = kmath::lane_sum(C, [&](int c) { return (xi[c] - m) * (xi[c] - m); }) / C;
        const float s = 1.f / kmath::sqrt(v + kLayerNormEps);
        float* o = &out(i, 0);
        for (int c = 0; c < C; ++c) o[c] = (xi[c] - m) * s * w(c) + b(c);
        mean(i) = m;
        rstd(i) = s;
      });
}

// Channels per thread in backward_params: its partial sums stay in L1 (or registers).
constexpr int kLayerNormChannelBlock = 32;

inline void layernorm_backward(const Mat& dx, const Vec& dw, const Vec& db, const ConstMat& dout,
                               const ConstMat& x, const ConstVec& w, const ConstVec& mean,
                               const ConstVec& rstd) {
  const int N = x.extent(0), C = x.extent(1);
  Kokkos::parallel_for(
      "layernorm::backward_input", Kokkos::RangePolicy<ExecSpace>(0, N),
      KOKKOS_LAMBDA(const int i) {
        const float m = mean(i), s = rstd(i);
        const float* xi = &x(i, 0);
        const float* gi = &dout(i, 0);
        // g = dout * w; xhat = (x - m) * s
        const float mean_g = kmath::lane_sum(C, [&](int c) { return gi[c] * w(c); }) / C;
        const float mean_gx =
            kmath::lane_sum(C, [&](int c) { return gi[c] * w(c) * (xi[c] - m) * s; }) / C;
        float* dxi = &dx(i, 0);
        for (int c = 0; c < C; ++c) {
          const float xhat = (xi[c] - m) * s;
          dxi[c] = s * (gi[c] * w(c) - mean_g - xhat * mean_gx);
        }
      });
  if (dw.extent(0) == 0) return;  // frozen weight and bias (an adapter run's base): dx only
  // A block of channels per thread, rows in order: deterministic parameter gradients without
  // atomics, and each row's block is a contiguous (vectorized) read.
  constexpr int CB = kLayerNormChannelBlock;
  Kokkos::parallel_for(
      "layernorm::backward_params", Kokkos::RangePolicy<ExecSpace>(0, (C + CB - 1) / CB),
      KOKKOS_LAMBDA(const int blk) {
        const int c0 = blk * CB, nc = C - c0 < CB ? C - c0 : CB;
        float gw[CB] = {}, gb[CB] = {};
        for (int i = 0; i < N; ++i) {
          const float m = mean(i), s = rstd(i);
          const float* gi = &dout(i, c0);
          const float* xi = &x(i, c0);
          for (int c = 0; c < nc; ++c) {
            gw[c] += gi[c] * ((xi[c] - m) * s);
            gb[c] += gi[c];
          }
        }
        for (int c = 0; c < nc; ++c) {
          dw(c0 + c) += gw[c];
          db(c0 + c) += gb[c];
        }
      });
}

}  // namespace fsdp::kernels
