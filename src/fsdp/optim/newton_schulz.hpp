// SPDX-License-Identifier: MIT
// Newton-Schulz orthogonalisation of one whole matrix, as Muon applies it: X / ||X||_F, then
// `steps` quintic iterations X <- a X + (b A + c A A) X with A = X X^T (on the wide side, so A
// is min(r, c) square), a, b, c = 3.4445, -4.7750, 2.0315. In fp32 GEMMs (model/gemm/gemm.hpp), in
// place. The result depends on the matrix's values and shape only: the same bits on whichever
// rank owns it, which is what makes distributed Muon deterministic at any rank count.
#pragma once
#include <cstdint>

#include "core/types.hpp"

namespace fsdp::optim {

inline constexpr float kNsA = 3.4445f, kNsB = -4.7750f, kNsC = 2.0315f;
inline constexpr double kNsEps = 1e-7;  // the norm's floor (PyTorch's Muon default)

// Workspace floats newton_schulz needs for an r x c matrix: two m x m Gram buffers and one
// r x c product, m = min(r, c); with bf16, their bf16 casts as well (half a float each).
std::int64_t newton_schulz_workspace(std::int64_t rows, std::int64_t cols, bool bf16 = false);
// FLOPs of the iteration (multiply-adds counted as two).
double newton_schulz_flops(std::int64_t rows, std::int64_t cols, int steps);

// x: rows * cols floats, row-major, where ExecSpace runs; work: newton_schulz_workspace floats.
// bf16 (muon.ns_dtype = bf16): each GEMM reads bf16 casts of X, A and B and accumulates and
// writes fp32 (model/gemm/bf16_gemm.hpp: bf16 kernels where the hardware has them, else the same
// products widened); the norm, the sums and X itself stay fp32.
void newton_schulz(const Vec& x, std::int64_t rows, std::int64_t cols, int steps, const Vec& work,
                   bool bf16 = false);

}  // namespace fsdp::optim
