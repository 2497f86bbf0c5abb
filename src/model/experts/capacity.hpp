// SPDX-License-Identifier: MIT
// How many rows the experts take: the capacity moe.capacity_factor sets, and the most rows one
// rank's experts can receive under expert parallelism (what its dispatch buffers are sized
// for, the planner's count too). Header-only and free of Kokkos: the layout-only builds (the
// fuzz targets) count with it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace fsdp::kernels {

// moe.capacity_factor f > 0: each expert's capacity among a micro-batch's R = N k choices,
// ceil(f R / E); 0 (dropless) otherwise.
inline std::int64_t expert_capacity(std::int64_t R, int experts, float capacity_factor) {
  if (capacity_factor <= 0) return 0;
  return std::int64_t(std::ceil(double(capacity_factor) * double(R) / experts));
}

// Expert parallelism over P ranks of R rows each: dropless, every row of all P (P R); under a
// capacity, E/P experts x P sources x the capacity (about f R), if that is fewer.
inline std::int64_t received_rows_bound(std::int64_t R, int experts, int P, float capacity_factor) {
  if (P <= 1) return R;
  const std::int64_t all = R * P, cap = expert_capacity(R, experts, capacity_factor);
  return cap > 0 ? std::min(all, std::int64_t(experts) * cap) : all;
}

// With bf16 GEMMs the experts read their input rows and their outputs' gradients rounded to
// bf16, so the two dispatches may move them as bf16: half the bytes, the same bits at the
// GEMM. bf16 payloads travel as 4-byte words, so a row of C elements needs C even (the
// returns carry fp32 outputs and input gradients, which no GEMM rounds: they stay fp32).
inline bool bf16_dispatch(int P, std::int64_t C) { return P > 1 && C % 2 == 0; }

}  // namespace fsdp::kernels
