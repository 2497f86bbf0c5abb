// SPDX-License-Identifier: MIT
// Attention as a GPU wants it: every head of a sequence in one strided-batched GEMM, and the
// softmax of every row of the batch in one kernel (a team per row, so a row's reads coalesce).
// The whole T x T score square is multiplied, masked in the softmax, rather than the causal
// blocks of attention.hpp: two launches per product and sequence instead of two per block and
// head. Same contract as attention.hpp (probabilities in att, zero past each row's t;
// dqkv assigned; starts as there); work holds a sequence's H score-gradient squares
// (attention_work_size).
#pragma once
#include <cstdint>

#include "core/math.hpp"
#include "core/types.hpp"
#include "model/gemm/batched_gemm.hpp"

namespace fsdp::kernels {

namespace detail {
using Team = Kokkos::TeamPolicy<ExecSpace>;

// Rows of T scores of sequence b0 (rows: H * T of it, or B * H * T from b0 = 0): row r is
// position t = r % T of sequence b0 + r / (H T), which sees keys lo..t, lo = its document's
// start (0 without starts).
KOKKOS_INLINE_FUNCTION int row_start(const int* starts, std::int64_t r, int b0, int H, int T) {
  return starts ? starts[(b0 + r / (std::int64_t(H) * T)) * T + r % T] : 0;
}

inline void softmax_causal_rows(float* s, std::int64_t rows, int T, int H = 1,
                                const int* starts = nullptr, int b0 = 0) {
  Kokkos::parallel_for(
      "attention::softmax_rows", Team(rows, Kokkos::AUTO), KOKKOS_LAMBDA(const Team::member_type& m) {
        const std::int64_t r = m.league_rank();
        const int n = int(r % T) + 1, lo = row_start(starts, r, b0, H, T);
        float* row = s + r * T;
        float mx = 0.f;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(m, lo, n), [&](const int j, float& v) { v = row[j] > v ? row[j] : v; },
            Kokkos::Max<float>(mx));
        float sum = 0.f;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(m, lo, n),
            [&](const int j, float& v) {
              const float e = kmath::exp_fast(row[j] - mx);
              row[j] = e;
              v += e;
            },
            sum);
        m.team_barrier();
        const float inv = 1.f / sum;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T),
                             [&](const int j) { row[j] = j < n && j >= lo ? row[j] * inv : 0.f; });
      });
}

// g = p * (g - sum(p * g)) over each row's keys lo..t, zero outside them.
inline void softmax_causal_backward_rows(const float* p, float* g, std::int64_t rows, int T,
                                         int H = 1, const int* starts = nullptr, int b0 = 0) {
  Kokkos::parallel_for(
      "attention::softmax_backward_rows", Team(rows, Kokkos::AUTO),
      KOKKOS_LAMBDA(const Team::member_type& m) {
        const std::int64_t r = m.league_rank();
        const int n = int(r % T) + 1, lo = row_start(starts, r, b0, H, T);
        const float* pr = p + r * T;
        float* gr = g + r * T;
        float dot = 0.f;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(m, lo, n), [&](const int j, float& v) { v += pr[j] * gr[j]; }, dot);
        m.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, T), [&](const int j) {
          gr[j] = j < n && j >= lo ? pr[j] * (gr[j] - dot) : 0.f;
        });
      });
}
}  // namespace detail

inline void attention_forward_batched(const Mat& out, const Att3& att, const ConstMat& qkv, int B,
                                      int T, int H, const int* starts = nullptr) {
  const std::int64_t C = out.extent(1), D = C / H, C3 = 3 * C, TT = std::int64_t(T) * T;
  const float scale = 1.f / kmath::sqrt(static_cast<float>(D));
  for (int b = 0; b < B; ++b) {
    const float* q = qkv.data() + std::int64_t(b) * T * C3;
    const Strided p{att.data() + std::int64_t(b) * H * TT, T, T, T, TT};
    gemm_strided_batched("N", "T", scale, {q, T, D, C3, D}, {q + C, T, D, C3, D}, 0.f, p, H);
  }
  detail::softmax_causal_rows(att.data(), std::int64_t(B) * H * T, T, H, starts);
  for (int b = 0; b < B; ++b) {
    const float* q = qkv.data() + std::int64_t(b) * T * C3;
    const Strided p{att.data() + std::int64_t(b) * H * TT, T, T, T, TT};
    gemm_strided_batched("N", "N", 1.f, p, {q + 2 * C, T, D, C3, D}, 0.f,
                         {out.data() + std::int64_t(b) * T * C, T, D, C, D}, H);
  }
}

inline void attention_backward_batched(const Mat& dqkv, const ConstMat& dout, const ConstAtt3& att,
                                       const ConstMat& qkv, int B, int T, int H, const Vec& work,
                                       const int* starts = nullptr) {
  const std::int64_t C = dout.extent(1), D = C / H, C3 = 3 * C, TT = std::int64_t(T) * T;
  const float scale = 1.f / kmath::sqrt(static_cast<float>(D));
  const Strided ds{work.data(), T, T, T, TT};
  for (int b = 0; b < B; ++b) {
    const float* q = qkv.data() + std::int64_t(b) * T * C3;
    const float* dy = dout.data() + std::int64_t(b) * T * C;
    float* dq = dqkv.data() + std::int64_t(b) * T * C3;
    const Strided p{att.data() + std::int64_t(b) * H * TT, T, T, T, TT};
    const Strided dys{dy, T, D, C, D};
    gemm_strided_batched("N", "T", 1.f, dys, {q + 2 * C, T, D, C3, D}, 0.f, ds, H);  // dP
    detail::softmax_causal_backward_rows(p.data, work.data(), std::int64_t(H) * T, T, H, starts, b);
    gemm_strided_batched("N", "N", scale, ds, {q + C, T, D, C3, D}, 0.f, {dq, T, D, C3, D}, H);
    gemm_strided_batched("T", "N", scale, ds, {q, T, D, C3, D}, 0.f, {dq + C, T, D, C3, D}, H);
    gemm_strided_batched("T", "N", 1.f, p, dys, 0.f, {dq + 2 * C, T, D, C3, D}, H);
  }
}

}  // namespace fsdp::kernels
