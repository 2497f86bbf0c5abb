// SPDX-License-Identifier: MIT
#include "fsdp/optim/newton_schulz.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/bf16.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "model/gemm/gemm.hpp"
#include "fsdp/optim/adamw.hpp"

namespace fsdp::optim {

std::int64_t newton_schulz_workspace(std::int64_t rows, std::int64_t cols, bool bf16) {
  const std::int64_t m = std::min(rows, cols), fp32 = 2 * m * m + rows * cols;
  return bf16 ? fp32 + (fp32 + 1) / 2 : fp32;
}

double newton_schulz_flops(std::int64_t rows, std::int64_t cols, int steps) {
  const double m = double(std::min(rows, cols)), n = double(std::max(rows, cols));
  // Per step: A = X X^T (2 m^2 n), A A (2 m^3), B X (2 m^2 n).
  return steps * (4.0 * m * m * n + 2.0 * m * m * m);
}

void newton_schulz(const Vec& x, std::int64_t rows, std::int64_t cols, int steps, const Vec& work,
                   bool bf16) {
  const std::int64_t n = rows * cols, m = std::min(rows, cols);
  // The Frobenius norm in double, in a fixed order (the same reduction as the gradient norm).
  const double norm = std::sqrt(sum_squares(ConstVec(x.data(), std::size_t(n))));
  const float inv = float(1.0 / std::max(norm, kNsEps));
  Kokkos::parallel_for(
      "muon::normalise", Kokkos::RangePolicy<ExecSpace>(0, n),
      KOKKOS_LAMBDA(const int64_t i) { x(i) *= inv; });
  const Mat A(work.data(), m, m), B(work.data() + m * m, m, m);
  float* cur = x.data();
  float* next = work.data() + 2 * m * m;
  const bool tall = rows > cols;  // orthogonalise X^T: A = X^T X, and X <- a X + X B (B symmetric)
  // bf16: the casts of X, then of A, then of B, in the workspace's last half-floats.
  std::uint16_t* half = reinterpret_cast<std::uint16_t*>(work.data() + 2 * m * m + n);
  const auto cast = [&](const float* src, std::int64_t count, std::int64_t at) {
    cast_to_bf16(ConstVec(src, std::size_t(count)), Bf16Vec(half + at, std::size_t(count)));
    return ConstBf16Mat(half + at, count / (count == n ? cols : m), count == n ? cols : m);
  };
  const auto gemm = [&](const char* ta, const char* tb, float alpha, const Mat& a, const Mat& b,
                        float beta, const Mat& c) {
    if (!bf16) return kernels::gemm(ta, tb, alpha, a, b, beta, c);
    const std::int64_t na = std::int64_t(a.size()), nb = std::int64_t(b.size());
    const ConstBf16Mat ha = cast(a.data(), na, 0);
    const ConstBf16Mat hb = b.data() == a.data() ? ha : cast(b.data(), nb, na);
    kernels::gemm_bf16(ta, tb, alpha, ha, hb, beta, c);
  };
  for (int k = 0; k < steps; ++k) {
    const Mat X(cur, rows, cols), Y(next, rows, cols);
    if (tall)
      gemm("T", "N", 1.f, X, X, 0.f, A);
    else
      gemm("N", "T", 1.f, X, X, 0.f, A);
    gemm("N", "N", kNsC, A, A, 0.f, B);  // B = c A A + b A
    const float b = kNsB;
    Kokkos::parallel_for(
        "muon::gram_update", Kokkos::RangePolicy<ExecSpace>(0, m * m),
        KOKKOS_LAMBDA(const int64_t i) { B.data()[i] += b * A.data()[i]; });
    Kokkos::deep_copy(ExecSpace(), Vec(next, std::size_t(n)), ConstVec(cur, std::size_t(n)));
    if (tall)
      gemm("N", "N", 1.f, X, B, kNsA, Y);
    else
      gemm("N", "N", 1.f, B, X, kNsA, Y);
    std::swap(cur, next);
  }
  if (cur != x.data())
    Kokkos::deep_copy(ExecSpace(), x, ConstVec(cur, std::size_t(n)));
}

}  // namespace fsdp::optim
