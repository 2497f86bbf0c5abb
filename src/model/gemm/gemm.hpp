// SPDX-License-Identifier: MIT
// Row-major matrix products: KokkosBlas::gemm on CPUs (OpenBLAS underneath), cuBLAS on GPUs
// (model/gemm/cublas_gemm.hpp). C = alpha * op(A) * op(B) + beta * C with 'N' or 'T' per operand.
#pragma once
#include "core/space_check.hpp"
#include "core/types.hpp"  // Kokkos' macros, KOKKOS_ENABLE_CUDA among them
#include "model/gemm/gemm_paths.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include "model/gemm/cublas_gemm.hpp"
#else
#include <KokkosBlas3_gemm.hpp>
#endif

namespace fsdp::kernels {

inline void gemm(const char* ta, const char* tb, float alpha, const ConstMat& a, const ConstMat& b,
                 float beta, const Mat& c) {
  const gemm_paths::Scope logged(
      {*ta, *tb, std::int64_t(c.extent(0)), std::int64_t(c.extent(1)),
       std::int64_t(*ta == 'N' ? a.extent(1) : a.extent(0)), false},
      gemm_paths::fp32_path());
#if defined(FSDP_SPACE_CHECK)
  // The emulated device is host memory underneath: hand the vendor BLAS the same bytes as host
  // Views (the same OpenBLAS call, so the same bits as the plain CPU build), as a device kernel.
  // A window of a wider matrix keeps its row stride.
  using HostMat = Kokkos::View<float**, Kokkos::LayoutRight, HostSpace, Unmanaged>;
  using HostConstMat = Kokkos::View<const float**, Kokkos::LayoutRight, HostSpace, Unmanaged>;
  auto host = [](const auto& m) -> HostConstMat {
    const HostConstMat rows(m.data(), m.extent(0), m.stride(0));
    return Kokkos::subview(rows, Kokkos::ALL, std::make_pair(std::size_t(0), m.extent(1)));
  };
  const space_check::KernelScope on_device;
  const HostMat hm(c.data(), c.extent(0), c.stride(0));
  KokkosBlas::gemm(ta, tb, alpha, host(a), host(b), beta,
                   Kokkos::subview(hm, Kokkos::ALL, std::make_pair(std::size_t(0), c.extent(1))));
#elif defined(KOKKOS_ENABLE_CUDA)
  cublas_gemm(ta, tb, alpha, a, b, beta, c);
#else
  KokkosBlas::gemm(ta, tb, alpha, a, b, beta, c);  // KokkosBlas names its own profiling region
#endif
}

}  // namespace fsdp::kernels
