// SPDX-License-Identifier: MIT
// GELU with the tanh approximation (GPT-2's "gelu_new"), elementwise over n values.
// Backward assigns dx (=).
#pragma once
#include "core/math.hpp"
#include "core/types.hpp"

namespace fsdp::kernels {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

inline void gelu_forward(const Vec& out, const ConstVec& x) {
  Kokkos::parallel_for(
      "gelu::forward", Kokkos::RangePolicy<ExecSpace>(0, x.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) {
        const float v = x(i);
        out(i) = 0.5f * v * (1.f + kmath::tanh(kGeluScale * (v + 0.044715f * v * v * v)));
      });
}

inline void gelu_backward(const Vec& dx, const ConstVec& x, const ConstVec& dout) {
  Kokkos::parallel_for(
      "gelu::backward", Kokkos::RangePolicy<ExecSpace>(0, x.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) {
        const float v = x(i);
        const float u = kGeluScale * (v + 0.044715f * v * v * v);
        const float th = kmath::tanh(u);
        const float sech2 = 1.f - th * th;
        const float du = kGeluScale * (1.f + 3.f * 0.044715f * v * v);
        dx(i) = dout(i) * (0.5f * (1.f + th) + 0.5f * v * sech2 * du);
      });
}

}  // namespace fsdp::kernels
