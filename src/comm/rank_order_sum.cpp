// SPDX-License-Identifier: MIT
// Tiled so a tile of dst stays in L1 while each rank's block streams past it once; the loops
// are plain and restrict-qualified so the compiler vectorises across elements (never across
// ranks, which would change the order).
#include "comm/rank_order_sum.hpp"

#include <algorithm>
#include <cstring>

#include "core/bf16.hpp"

// Wider vectors pay here because the blocks are usually still in cache. Element-wise adds give
// the same bits at any width.
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define FSDP_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef FSDP_VECTOR_CLONES
#define FSDP_VECTOR_CLONES
#endif

namespace fsdp::comm {
namespace {

constexpr std::size_t kTile = 2048;  // 8 KiB of dst

FSDP_VECTOR_CLONES void add2(float* __restrict d, const float* __restrict a,
                             const float* __restrict b, std::size_t m) {
  for (std::size_t i = 0; i < m; ++i) d[i] = a[i] + b[i];
}

FSDP_VECTOR_CLONES void accumulate(float* __restrict d, const float* __restrict a, std::size_t m) {
  for (std::size_t i = 0; i < m; ++i) d[i] += a[i];
}

FSDP_VECTOR_CLONES void widen(float* __restrict d, const std::uint16_t* __restrict a,
                              std::size_t m) {
  for (std::size_t i = 0; i < m; ++i) d[i] = from_bf16(a[i]);
}

FSDP_VECTOR_CLONES void accumulate_bf16(float* __restrict d, const std::uint16_t* __restrict a,
                                        std::size_t m) {
  for (std::size_t i = 0; i < m; ++i) d[i] += from_bf16(a[i]);
}

FSDP_VECTOR_CLONES void divide(float* __restrict d, float n, std::size_t m) {
  for (std::size_t i = 0; i < m; ++i) d[i] /= n;
}

}  // namespace

void sum_in_rank_order(const float* const* src, int n, float* dst, std::size_t count, ReduceOp op) {
  for (std::size_t t = 0; t < count; t += kTile) {
    const std::size_t m = std::min(kTile, count - t);
    float* d = dst + t;
    if (n == 1)
      std::memcpy(d, src[0] + t, m * sizeof(float));
    else
      add2(d, src[0] + t, src[1] + t, m);
    for (int q = 2; q < n; ++q) accumulate(d, src[q] + t, m);
    if (op == ReduceOp::Avg && n > 1) divide(d, float(n), m);
  }
}

void accumulate_floats(float* dst, const float* src, std::size_t count) {
  accumulate(dst, src, count);
}

void finish_op(float* dst, int n, std::size_t count, ReduceOp op) {
  if (op == ReduceOp::Avg && n > 1) divide(dst, float(n), count);
}

void sum_in_rank_order(const std::uint16_t* const* src, int n, float* dst, std::size_t count,
                       ReduceOp op) {
  for (std::size_t t = 0; t < count; t += kTile) {
    const std::size_t m = std::min(kTile, count - t);
    float* d = dst + t;
    widen(d, src[0] + t, m);
    for (int q = 1; q < n; ++q) accumulate_bf16(d, src[q] + t, m);
    if (op == ReduceOp::Avg && n > 1) divide(d, float(n), m);
  }
}

}  // namespace fsdp::comm
