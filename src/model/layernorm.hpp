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
        float m = 0.f;
        for (int c = 0; c < C; ++c) m += x(i, c);
        m /= C;
        float v = 0.f;
        for (int c = 0; c < C; ++c) {
          const float d = x(i, c) - m;
          v += d * d;
        }
        const float s = 1.f / kmath::sqrt(v / C + kLayerNormEps);
        for (int c = 0; c < C; ++c) out(i, c) = (x(i, c) - m) * s * w(c) + b(c);
        mean(i) = m;
        rstd(i) = s;
      });
}

inline void layernorm_backward(const Mat& dx, const Vec& dw, const Vec& db, const ConstMat& dout,
                               const ConstMat& x, const ConstVec& w, const ConstVec& mean,
                               const ConstVec& rstd) {
  const int N = x.extent(0), C = x.extent(1);
  Kokkos::parallel_for(
      "layernorm::backward_input", Kokkos::RangePolicy<ExecSpace>(0, N),
      KOKKOS_LAMBDA(const int i) {
        const float m = mean(i), s = rstd(i);
        float sum_g = 0.f, sum_gx = 0.f;  // g = dout * w; xhat = (x - m) * s
        for (int c = 0; c < C; ++c) {
          const float g = dout(i, c) * w(c);
          sum_g += g;
          sum_gx += g * (x(i, c) - m) * s;
        }
        sum_g /= C;
        sum_gx /= C;
        for (int c = 0; c < C; ++c) {
          const float xhat = (x(i, c) - m) * s;
          dx(i, c) = s * (dout(i, c) * w(c) - sum_g - xhat * sum_gx);
        }
      });
  // Channel-parallel, rows in order: deterministic parameter gradients without atomics.
  Kokkos::parallel_for(
      "layernorm::backward_params", Kokkos::RangePolicy<ExecSpace>(0, C),
      KOKKOS_LAMBDA(const int c) {
        float gw = 0.f, gb = 0.f;
        for (int i = 0; i < N; ++i) {
          gw += dout(i, c) * (x(i, c) - mean(i)) * rstd(i);
          gb += dout(i, c);
        }
        dw(c) += gw;
        db(c) += gb;
      });
}

}  // namespace fsdp::kernels
