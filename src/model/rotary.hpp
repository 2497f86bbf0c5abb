// SPDX-License-Identifier: MIT
// Rotary position embedding in Hugging Face's convention (Llama): each head vector's two halves
// rotate as pairs (i, i + D/2) by the angle t * inv_freq[i],
//   x1' = x1 cos - x2 sin,   x2' = x2 cos + x1 sin,
// with inv_freq[i] = theta^(-2i/D) and, with rope_scaling = "llama3", Llama 3.1's blend of
// the frequencies (model/model_config.hpp). The cos/sin table [T, D/2] is computed once, in
// double on the host and rounded, and applied in place to the q and k columns of the row-major
// matrix the fused q/k/v GEMM writes. Backward applies the transposed (inverse) rotation to the
// gradients in place.
#pragma once
#include <vector>

#include "core/memory.hpp"
#include "core/types.hpp"
#include "model/model_config.hpp"

namespace fsdp::kernels {

// inv_freq[i], i < D/2, as the model's rotary settings say (double: what the table is built from).
std::vector<double> rope_inv_freq(const ModelConfig& m);

class RopeTable {
 public:
  RopeTable() = default;
  // T positions of head size D = m.head_dim(); 2 * T * D/2 floats, tracked as activations.
  RopeTable(MemoryTracker& tracker, const ModelConfig& m, int T);
  static std::int64_t elements(const ModelConfig& m, int T) {
    return std::int64_t(T) * m.head_dim();
  }
  ConstVec cos() const { return cos_.cvec(); }
  ConstVec sin() const { return sin_.cvec(); }

 private:
  TrackedBuffer cos_, sin_;
};

// Rotates n_heads heads of size D starting at column col0 of every row of x (row b*T + t is
// position t, or positions(row) when given: packed documents restart at 0), in place;
// inverse = true applies the transposed rotation (the backward).
inline void rope_apply(const Mat& x, int T, int col0, int n_heads, int D, const RopeTable& table,
                       bool inverse, const ConstTokens& positions = ConstTokens()) {
  const int N = x.extent(0), half = D / 2;
  const bool own = positions.data() != nullptr;
  const ConstVec cs = table.cos(), sn = table.sin();
  const float sign = inverse ? -1.f : 1.f;
  Kokkos::parallel_for(
      "rope::apply", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int r) {
        const int t = own ? positions(r) : r % T;
        const float* c = &cs(std::int64_t(t) * half);
        const float* s = &sn(std::int64_t(t) * half);
        for (int h = 0; h < n_heads; ++h) {
          float* x1 = &x(r, col0 + h * D);
          float* x2 = x1 + half;
          for (int i = 0; i < half; ++i) {
            const float a = x1[i], b = x2[i], si = sign * s[i];
            x1[i] = a * c[i] - b * si;
            x2[i] = b * c[i] + a * si;
          }
        }
      });
}

}  // namespace fsdp::kernels
