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

inline void residual_backward(const Vec& dacc, const ConstVec& dout) {
  Kokkos::parallel_for(
      "residual::backward", Kokkos::RangePolicy<ExecSpace>(0, dacc.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { dacc(i) += dout(i); });
}

}  // namespace fsdp::kernels
