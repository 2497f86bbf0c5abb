// SPDX-License-Identifier: MIT
// Fused softmax + cross-entropy over the vocabulary. N = rows (B*T), V = vocabulary.
// Forward writes each row's loss; backward overwrites the logits with dlogits in place
// (= (softmax - onehot) * dloss), so the [N, V] buffer is never held twice.
#pragma once
#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::kernels {

inline void cross_entropy_forward(const Vec& losses, const ConstMat& logits,
                                  const ConstTokens& targets) {
  const int N = logits.extent(0), V = logits.extent(1);
  Kokkos::parallel_for(
      "cross_entropy::forward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        float mx = -3.0e38f;
        for (int v = 0; v < V; ++v) mx = logits(i, v) > mx ? logits(i, v) : mx;
        double sum = 0.0;
        for (int v = 0; v < V; ++v) sum += kmath::exp(logits(i, v) - mx);
        losses(i) = static_cast<float>(kmath::log(sum) + mx - logits(i, targets(i)));
      });
}

// dloss is the gradient of the reduced loss w.r.t. each row's loss (1/N for a mean).
inline void cross_entropy_backward(const Mat& logits_to_dlogits, const ConstTokens& targets,
                                   float dloss) {
  const int N = logits_to_dlogits.extent(0), V = logits_to_dlogits.extent(1);
  const Mat& z = logits_to_dlogits;
  Kokkos::parallel_for(
      "cross_entropy::backward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        float mx = -3.0e38f;
        for (int v = 0; v < V; ++v) mx = z(i, v) > mx ? z(i, v) : mx;
        float sum = 0.f;
        for (int v = 0; v < V; ++v) {
          const float e = kmath::exp(z(i, v) - mx);
          z(i, v) = e;
          sum += e;
        }
        const float inv = dloss / sum;
        for (int v = 0; v < V; ++v) z(i, v) *= inv;
        z(i, targets(i)) -= dloss;
      });
}

}  // namespace fsdp::kernels
