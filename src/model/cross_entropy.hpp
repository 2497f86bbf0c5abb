// SPDX-License-Identifier: MIT
// Fused softmax + cross-entropy over the vocabulary. N = rows (B*T), V = vocabulary.
// Forward writes each row's loss; backward overwrites the logits with dlogits in place
// (= (softmax - onehot) * dloss), so the [N, V] buffer is never held twice.
// Both sum the exponentials in double: at V = 50257 a float sum's rounding would show.
// A negative target is not scored (a prompt token, the token after a document's end): its
// loss is 0 and its row of dlogits 0.
#pragma once
#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::kernels {

inline void cross_entropy_forward(const Vec& losses, const ConstMat& logits,
                                  const ConstTokens& targets) {
  const int N = logits.extent(0), V = logits.extent(1);
  Kokkos::parallel_for(
      "cross_entropy::forward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        if (targets(i) < 0) {
          losses(i) = 0.f;
          return;
        }
        const float* z = &logits(i, 0);
        const float mx = kmath::row_max(z, V);
        // The exponentials go through a small buffer: a loop of exp_fast alone vectorizes.
        constexpr int chunk = 256;
        float e[chunk];
        double sum = 0.0;
        for (int v0 = 0; v0 < V; v0 += chunk) {
          const int len = V - v0 < chunk ? V - v0 : chunk;
          for (int j = 0; j < len; ++j) e[j] = kmath::exp_fast(z[v0 + j] - mx);
          sum += kmath::lane_sum_double(len, [&](int j) { return e[j]; });
        }
        losses(i) = static_cast<float>(kmath::log(sum) + mx - z[targets(i)]);
      });
}

// dloss is the gradient of the reduced loss w.r.t. each row's loss (1/N for a mean).
inline void cross_entropy_backward(const Mat& logits_to_dlogits, const ConstTokens& targets,
                                   float dloss) {
  const int N = logits_to_dlogits.extent(0), V = logits_to_dlogits.extent(1);
  const Mat& zm = logits_to_dlogits;
  Kokkos::parallel_for(
      "cross_entropy::backward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        float* z = &zm(i, 0);
        if (targets(i) < 0) {
          for (int v = 0; v < V; ++v) z[v] = 0.f;
          return;
        }
        const float mx = kmath::row_max(z, V);
        for (int v = 0; v < V; ++v) z[v] = kmath::exp_fast(z[v] - mx);
        const float inv =
            static_cast<float>(dloss / kmath::lane_sum_double(V, [&](int v) { return z[v]; }));
        for (int v = 0; v < V; ++v) z[v] *= inv;
        z[targets(i)] -= dloss;
      });
}

}  // namespace fsdp::kernels
