// SPDX-License-Identifier: MIT
// A row-major product as the column-major call that computes it (cuBLAS, Fortran BLAS): the
// same memory read as transposes, so C^T = op(B)^T op(A)^T, with the operands swapped. CUDA-free
// and Kokkos-free, so that the GPU build's argument mapping is tested on a CPU against a
// column-major BLAS (tests/unit/test_colmajor_gemm.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace fsdp::kernels {

// A row-major matrix: rows x cols elements, `stride` elements between rows (a window of a
// wider matrix keeps its parent's).
struct RowMajor {
  const void* data;
  std::size_t rows, cols, stride;
};

// Operand i of a strided batch (model/gemm/batched_gemm.hpp): rows x cols at data + i * step, rows
// `ld` elements apart.
struct Strided {
  const float* data;
  std::int64_t rows, cols, ld, step;
};

struct ColMajorCall {
  bool trans_first, trans_second;  // the column-major op() of its first and second operand
  int m, n, k;
  const void* first;
  int ld_first;
  const void* second;
  int ld_second;
  void* out;
  int ld_out;
};

// Row-major c = op(a) op(b), with op = transpose where ta / tb. Throws std::invalid_argument
// naming the three shapes when they do not fit together.
ColMajorCall colmajor_call(bool ta, bool tb, const RowMajor& a, const RowMajor& b, const RowMajor& c);

// A strided batch of such products (cublasSgemmStridedBatched): the call, and each column-major
// operand's step between problems, which follows its row-major operand (first = B, second = A).
struct ColMajorBatch {
  ColMajorCall call;
  long long step_first, step_second, step_out;
};
ColMajorBatch colmajor_batch(bool ta, bool tb, const RowMajor& a, long long a_step,
                             const RowMajor& b, long long b_step, const RowMajor& c,
                             long long c_step);

}  // namespace fsdp::kernels
