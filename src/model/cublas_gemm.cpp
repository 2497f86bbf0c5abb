// SPDX-License-Identifier: MIT
// Compiled in every build, holding code only in a CUDA one (the sources are globbed).
#include "model/cublas_gemm.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cublas_v2.h>

#include <algorithm>
#include <string>

#include "core/check.hpp"

namespace fsdp::kernels {
namespace {

void check(cublasStatus_t rc, const char* what) {
  if (rc != CUBLAS_STATUS_SUCCESS)
    fatal(std::string("cuBLAS: ") + what + " failed: " + cublasGetStatusName(rc) + " (" +
          cublasGetStatusString(rc) + ")");
}

// One handle for the run, on the stream every kernel and collective of the step uses, made on
// first use and destroyed at Kokkos::finalize, before the CUDA context goes.
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t made = nullptr;
    check(cublasCreate(&made), "cublasCreate");
    check(cublasSetStream(made, ExecSpace().cuda_stream()), "cublasSetStream");
    // fp32 stays fp32 (no TF32): the GPU's losses are held to the CPU build's at 1e-4.
    check(cublasSetMathMode(made, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    Kokkos::push_finalize_hook([] { cublasDestroy(h); });
    return made;
  }();
  return h;
}

bool transposed(const char* t) { return t[0] == 'T' || t[0] == 't'; }

// A row-major matrix's leading dimension as cuBLAS wants it: the row stride, at least the width.
int leading(std::size_t stride, std::size_t cols) {
  return int(std::max<std::size_t>({stride, cols, 1}));
}

}  // namespace

void cublas_gemm(const char* ta, const char* tb, float alpha, const ConstMat& a, const ConstMat& b,
                 float beta, const Mat& c) {
  const bool tA = transposed(ta), tB = transposed(tb);
  const std::size_t m = c.extent(0), n = c.extent(1);
  const std::size_t k = tA ? a.extent(0) : a.extent(1);
  const std::size_t am = tA ? a.extent(1) : a.extent(0);
  const std::size_t bk = tB ? b.extent(1) : b.extent(0), bn = tB ? b.extent(0) : b.extent(1);
  if (am != m || bk != k || bn != n)
    fatal("gemm: op(A) is " + std::to_string(am) + "x" + std::to_string(k) + ", op(B) " +
          std::to_string(bk) + "x" + std::to_string(bn) + ", C " + std::to_string(m) + "x" +
          std::to_string(n));
  if (m == 0 || n == 0) return;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T over the same memory.
  const cublasOperation_t opA = tA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = tB ? CUBLAS_OP_T : CUBLAS_OP_N;
  Kokkos::Profiling::pushRegion("cublas::sgemm");
  check(cublasSgemm(handle(), opB, opA, int(n), int(m), int(k), &alpha, b.data(),
                    leading(b.stride(0), b.extent(1)), a.data(), leading(a.stride(0), a.extent(1)),
                    &beta, c.data(), leading(c.stride(0), c.extent(1))),
        "cublasSgemm");
  Kokkos::Profiling::popRegion();
}

}  // namespace fsdp::kernels
#endif
