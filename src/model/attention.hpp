// SPDX-License-Identifier: MIT
// Causal multi-head self-attention core (between c_attn and c_proj).
// B = batch, T = time, C = channels, H = heads, D = C / H head size.
// qkv [B*T, 3C] holds q | k | v; out [B*T, C]; att [B*H, T, T] keeps the softmax probabilities
// (row t uses columns 0..t). Backward assigns dqkv (=); scratch [B*H, T] is a work row per head.
#pragma once
#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::kernels {

using Att3 = Kokkos::View<float***, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
using ConstAtt3 = Kokkos::View<const float***, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;

inline void attention_forward(const Mat& out, const Att3& att, const ConstMat& qkv, int B, int T,
                              int H) {
  const int C = out.extent(1), D = C / H;
  const float scale = 1.f / kmath::sqrt(static_cast<float>(D));
  Kokkos::parallel_for(
      "attention::forward", Kokkos::RangePolicy<ExecSpace>(0, B * H * T),
      KOKKOS_LAMBDA(const int idx) {
        const int t = idx % T, bh = idx / T, h = bh % H, b = bh / H;
        const int row = b * T + t;
        const float* q = &qkv(row, h * D);
        float mx = -3.0e38f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float* k = &qkv(b * T + t2, C + h * D);
          float s = 0.f;
          for (int d = 0; d < D; ++d) s += q[d] * k[d];
          s *= scale;
          att(bh, t, t2) = s;
          mx = s > mx ? s : mx;
        }
        float sum = 0.f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float e = kmath::exp(att(bh, t, t2) - mx);
          att(bh, t, t2) = e;
          sum += e;
        }
        const float inv = 1.f / sum;
        float* o = &out(row, h * D);
        for (int d = 0; d < D; ++d) o[d] = 0.f;
        for (int t2 = 0; t2 <= t; ++t2) {
          const float p = att(bh, t, t2) * inv;
          att(bh, t, t2) = p;
          const float* v = &qkv(b * T + t2, 2 * C + h * D);
          for (int d = 0; d < D; ++d) o[d] += p * v[d];
        }
      });
}

inline void attention_backward(const Mat& dqkv, const Mat& scratch, const ConstMat& dout,
                               const ConstAtt3& att, const ConstMat& qkv, int B, int T, int H) {
  const int C = dout.extent(1), D = C / H;
  const float scale = 1.f / kmath::sqrt(static_cast<float>(D));
  // One (batch, head) per thread: dk and dv of a position collect contributions from every later
  // query, so the head is the unit of ownership (no atomics, fixed order).
  Kokkos::parallel_for(
      "attention::backward", Kokkos::RangePolicy<ExecSpace>(0, B * H), KOKKOS_LAMBDA(const int bh) {
        const int h = bh % H, b = bh / H;
        for (int t = 0; t < T; ++t) {
          const int row = b * T + t;
          for (int d = 0; d < D; ++d) {
            dqkv(row, h * D + d) = 0.f;
            dqkv(row, C + h * D + d) = 0.f;
            dqkv(row, 2 * C + h * D + d) = 0.f;
          }
        }
        for (int t = 0; t < T; ++t) {
          const int row = b * T + t;
          const float* go = &dout(row, h * D);
          const float* q = &qkv(row, h * D);
          float* dq = &dqkv(row, h * D);
          float dot = 0.f;
          for (int t2 = 0; t2 <= t; ++t2) {
            const float* v = &qkv(b * T + t2, 2 * C + h * D);
            float s = 0.f;
            for (int d = 0; d < D; ++d) s += go[d] * v[d];
            scratch(bh, t2) = s;
            dot += att(bh, t, t2) * s;
          }
          for (int t2 = 0; t2 <= t; ++t2) {
            const float p = att(bh, t, t2);
            const float dpre = p * (scratch(bh, t2) - dot) * scale;
            const int row2 = b * T + t2;
            const float* k = &qkv(row2, C + h * D);
            float* dk = &dqkv(row2, C + h * D);
            float* dv = &dqkv(row2, 2 * C + h * D);
            for (int d = 0; d < D; ++d) {
              dq[d] += dpre * k[d];
              dk[d] += dpre * q[d];
              dv[d] += p * go[d];
            }
          }
        }
      });
}

}  // namespace fsdp::kernels
