// SPDX-License-Identifier: MIT
// The mixture-of-experts router as Hugging Face computes it (Qwen3MoeSparseMoeBlock,
// MixtralSparseMoeBlock): logits [N, E] in fp32, a softmax over the experts, the k largest
// probabilities (equal ones: the lower expert index first), renormalised to sum to 1 when asked
// (Qwen3-MoE's norm_topk_prob; Mixtral always), each token's output the weighted sum of its k
// experts'. And Hugging Face's load-balancing loss (load_balancing_loss_func): over every sparse
// layer's tokens of the micro-batch together, E * sum_e f_e P_e, f_e the share of (token, slot)
// choices that picked expert e per slot summed over slots, P_e the mean probability of e; its
// gradient reaches each layer's logits through P only (f is a count).
// Backward assigns dlogits (=): d weights through the renormalisation and the softmax, plus the
// balance loss's d/dp = coef * E * f_e / N_all, the same for every token.
#pragma once
#include <cstdint>

#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::kernels {

using ExpertIds = Kokkos::View<std::int32_t**, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
using ConstExpertIds =
    Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;

// probs [N, E], top [N, k], weights [N, k] from logits [N, E]. bias [E] (moe.balance = bias,
// DeepSeek-V3's auxiliary-loss-free balance; empty: none) is added to the probabilities only to
// choose the experts: the weights are the chosen experts' probabilities.
inline void router_forward(const ConstMat& logits, const Mat& probs, const ExpertIds& top,
                           const Mat& weights, bool renorm, const ConstVec& bias = ConstVec()) {
  const int N = int(logits.extent(0)), E = int(logits.extent(1)), K = int(top.extent(1));
  const bool biased = bias.extent(0) > 0;
  Kokkos::parallel_for(
      "moe::router_forward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        float m = logits(i, 0);
        for (int e = 1; e < E; ++e) m = logits(i, e) > m ? logits(i, e) : m;
        float s = 0.f;
        for (int e = 0; e < E; ++e) {
          const float x = kmath::exp(logits(i, e) - m);
          probs(i, e) = x;
          s += x;
        }
        for (int e = 0; e < E; ++e) probs(i, e) /= s;
        // k passes of a selection: the largest not yet taken, the lower index on a tie.
        float sum = 0.f;
        for (int j = 0; j < K; ++j) {
          int best = -1;
          for (int e = 0; e < E; ++e) {
            bool taken = false;
            for (int l = 0; l < j; ++l) taken = taken || top(i, l) == e;
            const float score = probs(i, e) + (biased ? bias(e) : 0.f);
            if (!taken && (best < 0 || score > probs(i, best) + (biased ? bias(best) : 0.f))) best = e;
          }
          top(i, j) = best;
          weights(i, j) = probs(i, best);
          sum += probs(i, best);
        }
        if (renorm)
          for (int j = 0; j < K; ++j) weights(i, j) /= sum;
      });
}

// dlogits [N, E] from d weights [N, k]; aux_dp [E]: the balance loss's d/dp (zeros without it).
inline void router_backward(const Mat& dlogits, const ConstMat& probs, const ConstExpertIds& top,
                            const ConstMat& weights, const ConstMat& dweights,
                            const ConstVec& aux_dp, bool renorm) {
  const int N = int(probs.extent(0)), E = int(probs.extent(1)), K = int(top.extent(1));
  Kokkos::parallel_for(
      "moe::router_backward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        float* dp = &dlogits(i, 0);  // d/dp first, then turned into d/dlogits in place
        for (int e = 0; e < E; ++e) dp[e] = aux_dp(e);
        // w_j = p_j / S (renorm) or p_j: d/dp_j = (dw_j - sum_l dw_l w_l) / S, or dw_j.
        float S = 0.f, wdw = 0.f;
        for (int j = 0; j < K; ++j) {
          S += probs(i, top(i, j));
          wdw += dweights(i, j) * weights(i, j);
        }
        for (int j = 0; j < K; ++j)
          dp[top(i, j)] += renorm ? (dweights(i, j) - wdw) / S : dweights(i, j);
        float pdp = 0.f;  // the softmax: dlogit_e = p_e (dp_e - sum_l p_l dp_l)
        for (int e = 0; e < E; ++e) pdp += probs(i, e) * dp[e];
        for (int e = 0; e < E; ++e) dp[e] = probs(i, e) * (dp[e] - pdp);
      });
}

// One layer's share of the balance loss's sums: counts[e] += the (token, slot) choices of e,
// psum[e] += the sum over tokens of p_e (in token order, on the host: E sums of N terms).
void router_balance_sums(const ConstMat& probs, const ConstExpertIds& top, std::int64_t* counts,
                         double* psum);

}  // namespace fsdp::kernels
