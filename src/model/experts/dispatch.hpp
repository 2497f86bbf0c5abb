// SPDX-License-Identifier: MIT
// Tokens to experts and back. A plan (made on the host from the router's choices [N, k]) lists
// the (token, slot) choices grouped by expert, each expert's in token order: the rows its
// grouped GEMMs read, and the order every rank exchanges and sums them in, whatever the number
// of ranks. gather copies token rows to their experts' rows; combine sums each token's k expert
// outputs, weighted, in slot order (deterministic, no atomics); their backwards are the
// transposes: combine's gives each expert row its d output and each weight its dot product,
// gather's sums each token's k d inputs in slot order.
#pragma once
#include <cstdint>
#include <vector>

#include "core/types.hpp"
#include "model/experts/router.hpp"

namespace fsdp::kernels {

struct DispatchPlan {
  int experts = 0, k = 0;
  std::vector<std::int64_t> counts;   // [E] rows per expert
  std::vector<std::int64_t> offsets;  // [E + 1] each expert's first row
  std::vector<std::int32_t> row_of;   // [N * k] choice t * k + j -> its expert row (-1: dropped)
  std::vector<std::int32_t> choice;   // [rows] expert row -> its choice t * k + j
  std::int64_t dropped = 0;           // choices past an expert's capacity
  std::int64_t rows() const { return offsets.empty() ? 0 : offsets.back(); }
};
// top: the router's choices, on the host. capacity > 0: each expert takes at most this many
// choices, the first in token order; the rest are dropped (no row: the token's output is the sum
// of its other experts', its weight unused).
DispatchPlan dispatch_plan(const std::int32_t* top, std::int64_t N, int k, int experts,
                           std::int64_t capacity = 0);

using Rows = Kokkos::View<const std::int32_t*, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;

// xe[r] = x[choice[r] / k] for every expert row r.
void moe_gather(const Mat& xe, const ConstMat& x, const Rows& choice, int k);
// Dropped choices (row -1) contribute nothing to any of these.
// dx[t] = sum_j dxe[row_of[t k + j]] (assigns).
void moe_gather_backward(const Mat& dx, const ConstMat& dxe, const Rows& row_of, int k);
// y[t] = sum_j w[t, j] ye[row_of[t k + j]] (assigns).
void moe_combine(const Mat& y, const ConstMat& ye, const ConstMat& w, const Rows& row_of);
// dye[r] = w[t, j] dy[t] and dw[t, j] = dy[t] . ye[r], r = row_of[t k + j] (both assigned).
void moe_combine_backward(const Mat& dye, const Mat& dw, const ConstMat& dy, const ConstMat& ye,
                          const ConstMat& w, const Rows& row_of);

}  // namespace fsdp::kernels
