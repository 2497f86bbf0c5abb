// SPDX-License-Identifier: MIT
// Qwen3's per-head RMSNorm of q and k, before the rotation: each head of size D of the first
// H (q, weight wq) and the next KV (k, weight wk) heads of every q|k|v row is normalised by its
// own root mean square, in place. The inputs are kept (raw, [N (H+KV), D]) with each head's
// rstd for backward; the arithmetic is model/rmsnorm.hpp's, head by head:
//   y = x * r * w,  dx = r * (g - x * r^2 * mean(g * x)) with g = dy * w,  dw += dy * x * r.
#pragma once
#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::kernels {

inline void head_rmsnorm_forward(const Mat& qkv, const Vec& raw, const Vec& rstd,
                                 const ConstVec& wq, const ConstVec& wk, int H, int KV, int D,
                                 float eps) {
  const int HK = H + KV;
  const std::int64_t N = qkv.extent(0);
  Kokkos::parallel_for(
      "head_rmsnorm::forward", Kokkos::RangePolicy<ExecSpace>(0, N * HK),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const std::int64_t n = i / HK;
        const int h = int(i % HK);
        float* x = &qkv(n, std::int64_t(h) * D);
        float* kept = &raw(i * D);
        const float* w = h < H ? &wq(0) : &wk(0);
        const float ms = kmath::lane_sum(D, [&](int c) { return x[c] * x[c]; }) / D;
        const float r = 1.f / kmath::sqrt(ms + eps);
        for (int c = 0; c < D; ++c) {
          kept[c] = x[c];
          x[c] = x[c] * r * w[c];
        }
        rstd(i) = r;
      });
}

// dqkv's q and k columns hold the gradient of the normalised heads; they are replaced by the
// gradient of the raw ones, and dwq, dwk accumulate (+=). The weight gradients are summed per
// channel over rows and heads in order (deterministic without atomics), before the in-place
// input gradient overwrites what they read.
inline void head_rmsnorm_backward(const Mat& dqkv, const Vec& dwq, const Vec& dwk,
                                  const ConstVec& raw, const ConstVec& rstd, const ConstVec& wq,
                                  const ConstVec& wk, int H, int KV, int D) {
  const int HK = H + KV;
  const std::int64_t N = dqkv.extent(0);
  // Empty dwq and dwk: frozen weights (an adapter run's base), dx only.
  if (dwq.extent(0) > 0) Kokkos::parallel_for(
      "head_rmsnorm::backward_weight", Kokkos::RangePolicy<ExecSpace>(0, 2 * D),
      KOKKOS_LAMBDA(const int j) {
        const bool q = j < D;
        const int c = q ? j : j - D, h0 = q ? 0 : H, h1 = q ? H : HK;
        float s = 0.f;
        for (std::int64_t n = 0; n < N; ++n)
          for (int h = h0; h < h1; ++h) {
            const std::int64_t i = n * HK + h;
            s += dqkv(n, std::int64_t(h) * D + c) * (raw(i * D + c) * rstd(i));
          }
        if (q) dwq(c) += s;
        else dwk(c) += s;
      });
  Kokkos::parallel_for(
      "head_rmsnorm::backward_input", Kokkos::RangePolicy<ExecSpace>(0, N * HK),
      KOKKOS_LAMBDA(const std::int64_t i) {
        const std::int64_t n = i / HK;
        const int h = int(i % HK);
        float* g = &dqkv(n, std::int64_t(h) * D);
        const float* x = &raw(i * D);
        const float* w = h < H ? &wq(0) : &wk(0);
        const float r = rstd(i);
        const float mean_gx = kmath::lane_sum(D, [&](int c) { return g[c] * w[c] * x[c]; }) / D;
        const float k = r * r * mean_gx;
        for (int c = 0; c < D; ++c) g[c] = r * (g[c] * w[c] - x[c] * k);
      });
}

}  // namespace fsdp::kernels
