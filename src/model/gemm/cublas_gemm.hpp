// SPDX-License-Identifier: MIT
// The GPU build's GEMM: cuBLAS called directly on Kokkos' stream. KokkosBlas would end in the
// same cublasSgemm, but its library instantiates every kernel it has for every type (160 MB for
// sm_90), which a GPU build then ships for one call; the CPU build keeps KokkosBlas (OpenBLAS).
#pragma once
#include "core/types.hpp"
#include "model/gemm/colmajor_gemm.hpp"

namespace fsdp::kernels {

// C = alpha * op(A) * op(B) + beta * C on row-major views ('N' or 'T' per operand); a window
// of a wider matrix keeps its row stride. fp32 in and out, fp32 arithmetic (no TF32).
void cublas_gemm(const char* ta, const char* tb, float alpha, const ConstMat& a, const ConstMat& b,
                 float beta, const Mat& c);
// count products at fixed strides (model/gemm/batched_gemm.hpp), one cublasSgemmStridedBatched.
void cublas_gemm_strided_batched(const char* ta, const char* tb, float alpha, const Strided& a,
                                 const Strided& b, float beta, const Strided& c, int count);
// The same with bf16 A and B (tensor cores), fp32 accumulation and fp32 C.
void cublas_gemm_bf16(const char* ta, const char* tb, float alpha, const ConstBf16Mat& a,
                      const ConstBf16Mat& b, float beta, const Mat& c);

}  // namespace fsdp::kernels
