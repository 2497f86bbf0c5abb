// SPDX-License-Identifier: MIT
// Row-major matrix products through KokkosBlas::gemm (vendor BLAS underneath: OpenBLAS here,
// cuBLAS on GPUs). C = alpha * op(A) * op(B) + beta * C with 'N' or 'T' per operand.
#pragma once
#include <KokkosBlas3_gemm.hpp>

#include "core/types.hpp"

namespace fsdp::kernels {

inline void gemm(const char* ta, const char* tb, float alpha, const ConstMat& a, const ConstMat& b,
                 float beta, const Mat& c) {
  KokkosBlas::gemm(ta, tb, alpha, a, b, beta, c);  // KokkosBlas names its own profiling region
}

}  // namespace fsdp::kernels
