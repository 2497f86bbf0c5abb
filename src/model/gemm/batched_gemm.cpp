// SPDX-License-Identifier: MIT
#include "model/gemm/batched_gemm.hpp"

#include "model/gemm/cublas_gemm.hpp"
#include "model/gemm/gemm.hpp"

namespace fsdp::kernels {
#if !defined(KOKKOS_ENABLE_CUDA)
namespace {

// Operand i as the window of a wider row-major matrix that it is.
ConstMat window(const Strided& s, int i) {
  const ConstMat rows(s.data + std::int64_t(i) * s.step, s.rows, s.ld);
  return Kokkos::subview(rows, Kokkos::ALL, std::make_pair(std::int64_t(0), s.cols));
}

}  // namespace
#endif

void gemm_strided_batched(const char* ta, const char* tb, float alpha, const Strided& a,
                          const Strided& b, float beta, const Strided& c, int count) {
#if defined(KOKKOS_ENABLE_CUDA)
  cublas_gemm_strided_batched(ta, tb, alpha, a, b, beta, c, count);
#else
  for (int i = 0; i < count; ++i) {
    const Mat parent(const_cast<float*>(c.data + std::int64_t(i) * c.step), c.rows, c.ld);
    gemm(ta, tb, alpha, window(a, i), window(b, i), beta,
         Kokkos::subview(parent, Kokkos::ALL, std::make_pair(std::int64_t(0), c.cols)));
  }
#endif
}

}  // namespace fsdp::kernels
