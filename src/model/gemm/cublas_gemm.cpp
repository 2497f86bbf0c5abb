// SPDX-License-Identifier: MIT
// Compiled in every build, holding code only in a CUDA one (the sources are globbed).
#include "model/gemm/cublas_gemm.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cublas_v2.h>

#include <stdexcept>
#include <string>

#include "core/check.hpp"
#include "model/gemm/colmajor_gemm.hpp"

namespace fsdp::kernels {
namespace {

void check(cublasStatus_t rc, const char* what) {
  if (rc != CUBLAS_STATUS_SUCCESS)
    fatal(std::string("cuBLAS: ") + what + " failed: " + cublasGetStatusName(rc) + " (" +
          cublasGetStatusString(rc) + ")");
}

// One handle for the run, on the stream every kernel and collective of the step uses, made on
// first use and destroyed at Kokkos::finalize, before the CUDA context goes.
cublasHandle_t& handle_slot() {
  static cublasHandle_t h = nullptr;
  return h;
}

cublasHandle_t handle() {
  cublasHandle_t& h = handle_slot();
  if (h) return h;
  check(cublasCreate(&h), "cublasCreate");
  check(cublasSetStream(h, ExecSpace().cuda_stream()), "cublasSetStream");
  // fp32 stays fp32 (no TF32): the GPU's losses are held to the CPU build's at 1e-4.
  check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  Kokkos::push_finalize_hook([] {
    cublasDestroy(handle_slot());
    handle_slot() = nullptr;
  });
  return h;
}

bool transposed(const char* t) { return t[0] == 'T' || t[0] == 't'; }

template <class M>
RowMajor row_major(const M& m) {
  return {m.data(), m.extent(0), m.extent(1), m.stride(0)};
}

// The column-major call for row-major c = op(a) op(b), or a fatal naming the shapes.
template <class A, class B>
ColMajorCall mapped(const char* ta, const char* tb, const A& a, const B& b, const Mat& c) {
  try {
    return colmajor_call(transposed(ta), transposed(tb), row_major(a), row_major(b), row_major(c));
  } catch (const std::invalid_argument& e) {
    fatal(e.what());
  }
}

cublasOperation_t op(bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

void cublas_gemm(const char* ta, const char* tb, float alpha, const ConstMat& a, const ConstMat& b,
                 float beta, const Mat& c) {
  if (c.extent(0) == 0 || c.extent(1) == 0) return;
  const ColMajorCall call = mapped(ta, tb, a, b, c);
  Kokkos::Profiling::pushRegion("cublas::sgemm");
  check(cublasSgemm(handle(), op(call.trans_first), op(call.trans_second), call.m, call.n, call.k,
                    &alpha, static_cast<const float*>(call.first), call.ld_first,
                    static_cast<const float*>(call.second), call.ld_second, &beta,
                    static_cast<float*>(call.out), call.ld_out),
        "cublasSgemm");
  Kokkos::Profiling::popRegion();
}

void cublas_gemm_strided_batched(const char* ta, const char* tb, float alpha, const Strided& a,
                                 const Strided& b, float beta, const Strided& c, int count) {
  if (count == 0 || c.rows == 0 || c.cols == 0) return;
  const auto rm = [](const Strided& s) {
    return RowMajor{s.data, std::size_t(s.rows), std::size_t(s.cols), std::size_t(s.ld)};
  };
  ColMajorBatch batch;
  try {
    batch = colmajor_batch(transposed(ta), transposed(tb), rm(a), a.step, rm(b), b.step, rm(c), c.step);
  } catch (const std::invalid_argument& e) {
    fatal(e.what());
  }
  const ColMajorCall& call = batch.call;
  Kokkos::Profiling::pushRegion("cublas::sgemm_strided_batched");
  check(cublasSgemmStridedBatched(handle(), op(call.trans_first), op(call.trans_second), call.m,
                                  call.n, call.k, &alpha, static_cast<const float*>(call.first),
                                  call.ld_first, batch.step_first,
                                  static_cast<const float*>(call.second), call.ld_second,
                                  batch.step_second, &beta, static_cast<float*>(call.out),
                                  call.ld_out, batch.step_out, count),
        "cublasSgemmStridedBatched");
  Kokkos::Profiling::popRegion();
}

void cublas_gemm_bf16(const char* ta, const char* tb, float alpha, const ConstBf16Mat& a,
                      const ConstBf16Mat& b, float beta, const Mat& c) {
  if (c.extent(0) == 0 || c.extent(1) == 0) return;
  const ColMajorCall call = mapped(ta, tb, a, b, c);
  Kokkos::Profiling::pushRegion("cublas::gemm_bf16");
  check(cublasGemmEx(handle(), op(call.trans_first), op(call.trans_second), call.m, call.n, call.k,
                     &alpha, call.first, CUDA_R_16BF, call.ld_first, call.second, CUDA_R_16BF,
                     call.ld_second, &beta, call.out, CUDA_R_32F, call.ld_out, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx (bf16)");
  Kokkos::Profiling::popRegion();
}

}  // namespace fsdp::kernels
#endif
