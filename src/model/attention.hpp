// SPDX-License-Identifier: MIT
// Causal multi-head self-attention core (between the q, k, v projection and the output projection).
// B = batch, T = time, C = channels, H = heads, D = C / H head size.
// starts (optional, [B*T] on the device): the window position where each row's document begins
// (data.packing = documents); row t then sees keys starts[t]..t, and the columns before its
// document hold 0 like those past t.
// qkv [B*T, 3C] holds q | k | v; out [B*T, C]; att [B*H, T, T] keeps the softmax probabilities
// (row t uses columns 0..t; columns past t up to the end of t's causal block hold 0).
// Backward assigns dqkv (=); work [T, T] holds one head's score gradients at a time.
// Every product is a gemm per head and causal row block on strided windows of the row-major
// matrices (subviews keep LayoutRight, and BLAS takes the row stride as leading dimension), so
// nothing is copied into head-major buffers.
#pragma once
#include <algorithm>

#include "core/math.hpp"
#include "core/types.hpp"
#include "model/attention_batched.hpp"
#include "model/attention_path.hpp"
#include "model/gemm/gemm.hpp"

namespace fsdp::kernels {

// Query rows [begin(i), end(i)) see keys [0, end(i)), so block i's scores are one
// [end - begin, end] gemm and the keys past a block's last row are never multiplied (with two
// blocks, 3/4 of the full T x T work). The masked corner inside a block is computed and zeroed.
struct CausalBlocks {
  int T, rows;  // rows per block; only the last block may be shorter
  KOKKOS_INLINE_FUNCTION int count() const { return (T + rows - 1) / rows; }
  KOKKOS_INLINE_FUNCTION int begin(int i) const { return i * rows; }
  KOKKOS_INLINE_FUNCTION int end(int i) const { return (i + 1) * rows < T ? (i + 1) * rows : T; }
};

// At least two blocks (so short test sequences take the multi-block path too) of at most 64 rows:
// smaller blocks skip more of the masked triangle but make smaller, slower gemms. On one core,
// 32 and 64 rows tie at T = 128 and 32 rows win at T = 64.
inline CausalBlocks causal_blocks(int T) { return {T, T < 2 ? 1 : std::min(64, (T + 1) / 2)}; }

namespace detail {
using Range = Kokkos::pair<int, int>;
// Rows [r0, r1), columns [c0, c0 + n) of a row-major matrix, with the parent's row stride.
inline ConstMat window(const ConstMat& m, int r0, int r1, int c0, int n) {
  return Kokkos::subview(m, Range(r0, r1), Range(c0, c0 + n));
}
inline Mat window(const Mat& m, int r0, int r1, int c0, int n) {
  return Kokkos::subview(m, Range(r0, r1), Range(c0, c0 + n));
}
}  // namespace detail

// Grouped-query heads (KV < H): query head h reads key/value head g = h / (H / KV), whose
// columns are C + g*D (k) and C + KV*D + g*D (v) of q | k | v rows [B*T, C + 2*KV*D]; KV = H is
// GPT-2's packed [B*T, 3C]. Nothing is copied per query head.
inline void attention_forward_blocked(const Mat& out, const Att3& att, const ConstMat& qkv, int B,
                                      int T, int H, int KV, const int* starts = nullptr) {
  using detail::window;
  const int C = out.extent(1), D = C / H, group = H / KV, kcol = C, vcol = C + KV * D;
  const float scale = 1.f / kmath::sqrt(static_cast<float>(D));
  const CausalBlocks cb = causal_blocks(T);
  // One head at a time, so its [T, T] probabilities are still in cache for the second gemm.
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const int bh = b * H + h, r = b * T, g = h / group;
      const Mat p(att.data() + std::int64_t(bh) * T * T, T, T);
      for (int i = 0; i < cb.count(); ++i) {
        const int r0 = cb.begin(i), r1 = cb.end(i);
        gemm("N", "T", scale, window(qkv, r + r0, r + r1, h * D, D),
             window(qkv, r, r + r1, kcol + g * D, D), 0.f, window(p, r0, r1, 0, r1));
      }
      Kokkos::parallel_for(
          "attention::softmax", Kokkos::RangePolicy<ExecSpace>(0, T), KOKKOS_LAMBDA(const int t) {
            const int lo = starts ? starts[r + t] : 0;
            float* row = &p(t, 0);
            float* s = row + lo;
            const int n = t + 1 - lo, width = cb.end(t / cb.rows);
            const float mx = kmath::row_max(s, n);
            for (int j = 0; j < n; ++j) s[j] = kmath::exp_fast(s[j] - mx);
            const float inv = 1.f / kmath::lane_sum(n, [&](int j) { return s[j]; });
            for (int j = 0; j < n; ++j) s[j] *= inv;
            for (int j = 0; j < lo; ++j) row[j] = 0.f;
            for (int j = t + 1; j < width; ++j) row[j] = 0.f;
          });
      for (int i = 0; i < cb.count(); ++i) {
        const int r0 = cb.begin(i), r1 = cb.end(i);
        gemm("N", "N", 1.f, window(p, r0, r1, 0, r1), window(qkv, r, r + r1, vcol + g * D, D), 0.f,
             window(out, r + r0, r + r1, h * D, D));
      }
    }
}

inline void attention_backward_blocked(const Mat& dqkv, const ConstMat& dout, const ConstAtt3& att,
                                       const ConstMat& qkv, int B, int T, int H, int KV,
                                       const Vec& work, const int* starts = nullptr) {
  using detail::window;
  const int C = dout.extent(1), D = C / H, group = H / KV, kcol = C, vcol = C + KV * D;
  const float scale = 1.f / kmath::sqrt(static_cast<float>(D));
  const CausalBlocks cb = causal_blocks(T);
  const Mat ds(work.data(), T, T);  // dprobs, then dscores (the 1/sqrt(D) goes to the gemms)
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const int bh = b * H + h, r = b * T, g = h / group;
      const ConstMat p(att.data() + std::int64_t(bh) * T * T, T, T);
      for (int i = 0; i < cb.count(); ++i) {
        const int r0 = cb.begin(i), r1 = cb.end(i);
        gemm("N", "T", 1.f, window(dout, r + r0, r + r1, h * D, D),
             window(qkv, r, r + r1, vcol + g * D, D), 0.f, window(ds, r0, r1, 0, r1));
      }
      Kokkos::parallel_for(
          "attention::softmax_backward", Kokkos::RangePolicy<ExecSpace>(0, T),
          KOKKOS_LAMBDA(const int t) {
            const int lo = starts ? starts[r + t] : 0;
            const float* pr = &p(t, lo);
            float* grow = &ds(t, 0);
            float* gr = grow + lo;
            const int n = t + 1 - lo, width = cb.end(t / cb.rows);
            const float dot = kmath::lane_sum(n, [&](int j) { return pr[j] * gr[j]; });
            for (int j = 0; j < n; ++j) gr[j] = pr[j] * (gr[j] - dot);
            for (int j = 0; j < lo; ++j) grow[j] = 0.f;
            for (int j = t + 1; j < width; ++j) grow[j] = 0.f;
          });
      // Keys and values collect from every later block and from every query head of their
      // group: the group's first head's last block spans all keys, so it assigns (beta 0), and
      // everything after accumulates, always in the same order.
      for (int i = cb.count() - 1; i >= 0; --i) {
        const int r0 = cb.begin(i), r1 = cb.end(i);
        const float beta = i == cb.count() - 1 && h % group == 0 ? 0.f : 1.f;
        const ConstMat dsi = window(ConstMat(ds), r0, r1, 0, r1);
        gemm("N", "N", scale, dsi, window(qkv, r, r + r1, kcol + g * D, D), 0.f,
             window(dqkv, r + r0, r + r1, h * D, D));
        gemm("T", "N", scale, dsi, window(qkv, r + r0, r + r1, h * D, D), beta,
             window(dqkv, r, r + r1, kcol + g * D, D));
        gemm("T", "N", 1.f, window(p, r0, r1, 0, r1), window(dout, r + r0, r + r1, h * D, D), beta,
             window(dqkv, r, r + r1, vcol + g * D, D));
      }
    }
}

// A CPU takes the causal blocks one head at a time (cache-sized, and 3/4 of the square's work);
// a GPU takes every head at once (attention_batched.hpp).
// Grouped-query heads (KV < H) on a CPU only: the GPU's batched path reads GPT-2's packed
// layout, and GPUs take the fused kernel (model/attention_path.hpp, materialized_reads_gqa).
inline void attention_forward(const Mat& out, const Att3& att, const ConstMat& qkv, int B, int T,
                              int H, int KV, const int* starts = nullptr) {
#if defined(KOKKOS_ENABLE_CUDA)
  if (KV != H) Kokkos::abort("attention: the materialised GPU kernel has no grouped-query heads");
  attention_forward_batched(out, att, qkv, B, T, H, starts);
#else
  attention_forward_blocked(out, att, qkv, B, T, H, KV, starts);
#endif
}
inline void attention_forward(const Mat& out, const Att3& att, const ConstMat& qkv, int B, int T,
                              int H) {
  attention_forward(out, att, qkv, B, T, H, H);
}

inline void attention_backward(const Mat& dqkv, const ConstMat& dout, const ConstAtt3& att,
                               const ConstMat& qkv, int B, int T, int H, int KV, const Vec& work,
                               const int* starts = nullptr) {
#if defined(KOKKOS_ENABLE_CUDA)
  if (KV != H) Kokkos::abort("attention: the materialised GPU kernel has no grouped-query heads");
  attention_backward_batched(dqkv, dout, att, qkv, B, T, H, work, starts);
#else
  attention_backward_blocked(dqkv, dout, att, qkv, B, T, H, KV, work, starts);
#endif
}
inline void attention_backward(const Mat& dqkv, const ConstMat& dout, const ConstAtt3& att,
                               const ConstMat& qkv, int B, int T, int H, const Vec& work) {
  attention_backward(dqkv, dout, att, qkv, B, T, H, H, work);
}

// The signature of the per-head kernel this replaced, for tests and one-off calls: it allocates
// its own untracked work space (the model passes tracked work space) and ignores `scratch`.
inline void attention_backward(const Mat& dqkv, const Mat& /*scratch*/, const ConstMat& dout,
                               const ConstAtt3& att, const ConstMat& qkv, int B, int T, int H) {
  FlatView work("attention::work", attention_work_size(T, H));
  attention_backward(dqkv, dout, att, qkv, B, T, H, Vec(work.data(), work.extent(0)));
}

}  // namespace fsdp::kernels
