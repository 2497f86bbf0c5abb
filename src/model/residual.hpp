// SPDX-License-Identifier: MIT
// Residual connection out = a + b over n values. Its backward is the identity on both inputs,
// so callers add the incoming gradient into the residual stream's gradient (+=).
#pragma once
#include "core/types.hpp"

namespace fsdp::kernels {

inline void residual_forward(const Vec& out, const ConstVec& a, const ConstVec& b) {
  Kokkos::parallel_for(
      "residual::forward", Kokkos::RangePolicy<ExecSpace>(0, out.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { out(i) = a(i) + b(i); });
}

// out = a + (b + bias), bias broadcast over rows of width C: a residual whose branch is a linear
// layer computed without its bias (linear_forward_no_bias).
inline void residual_bias_forward(const Vec& out, const ConstVec& a, const ConstVec& b,
                                  const ConstVec& bias) {
  const int64_t C = bias.extent(0), rows = out.extent(0) / C;
  Kokkos::parallel_for(
      "residual::bias_forward", Kokkos::RangePolicy<ExecSpace>(0, rows),
      KOKKOS_LAMBDA(const int64_t r) {
        const int64_t o = r * C;
        for (int64_t c = 0; c < C; ++c) out(o + c) = a(o + c) + (b(o + c) + bias(c));
      });
}

inline void residual_backward(const Vec& dacc, const ConstVec& dout) {
  Kokkos::parallel_for(
      "residual::backward", Kokkos::RangePolicy<ExecSpace>(0, dacc.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { dacc(i) += dout(i); });
}

}  // namespace fsdp::kernels
