// SPDX-License-Identifier: MIT
// Row-major GEMMs through oneDNN's matmul primitive (CPU builds with oneDNN): bf16 inputs with
// fp32 accumulation and output run on AMX or AVX512-BF16 where the CPU has them. A primitive is
// created once per shape, operand layout and alpha/beta, and reused: creating one costs far
// more than running a small GEMM. fp32 inputs go through the same mapping (the tests use it on
// CPUs without bf16 kernels, and the GEMM micro-benchmark compares against it).
#pragma once
#include <cstdint>
#include <string>

#include "model/gemm/gemm_rows.hpp"

namespace fsdp::kernels::onednn {

enum class Inputs { F32, BF16 };

// Whether this build has oneDNN at all.
bool built();
// oneDNN's kernel for `inputs` on this CPU, probed once on a model-sized shape: `fast` is false
// when there is none or only its reference loops ("ref:any"); `impl` names the kernel or why not.
struct Support {
  bool fast = false;
  std::string impl;
};
const Support& support(Inputs inputs);
// The kernel oneDNN gives a GemmRows::Ragged call: one primitive whose token rows are a run-time
// dimension. `fast` is false where that is only the reference loops; matmul then makes a
// primitive per row count instead, as for a fixed shape.
const Support& ragged_support(Inputs inputs);

// C[M,N] = alpha * op(A) * op(B) + beta * C, row-major with row strides lda, ldb, ldc; op is
// 'N' or 'T'. A and B hold floats or bf16 bit patterns as `inputs` says; C is fp32. Returns the
// name of the kernel oneDNN ran. Fatal (one line naming the shape) where oneDNN has none.
// `rows` = Ragged: A's stored row count changes from call to call (an expert's tokens), so one
// primitive serves every count rather than one being made (about a millisecond, with its first
// run) for each new count.
const std::string& matmul(Inputs inputs, char ta, char tb, std::int64_t M, std::int64_t N,
                          std::int64_t K, float alpha, const void* a, std::int64_t lda,
                          const void* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc,
                          GemmRows rows = GemmRows::Fixed);

// Primitives created so far (the tests check that repeating a shape creates none).
std::int64_t primitives_created();

}  // namespace fsdp::kernels::onednn
