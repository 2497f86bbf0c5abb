// SPDX-License-Identifier: MIT
#include "model/gemm_peak.hpp"

#include <algorithm>
#include <cstdint>

#include "core/bf16.hpp"
#include "core/clock.hpp"
#include "core/types.hpp"
#include "model/bf16_gemm.hpp"
#include "model/gemm.hpp"

namespace fsdp {
double measure_gemm_flops(bool bf16) {
  const int n = 1024;
  FlatView a("peak::a", n * n), b("peak::b", n * n), c("peak::c", n * n);
  Kokkos::View<std::uint16_t*, DeviceSpace> ha("peak::a_bf16", bf16 ? n * n : 0),
      hb("peak::b_bf16", bf16 ? n * n : 0);
  Kokkos::deep_copy(a, 1.f);
  Kokkos::deep_copy(b, 0.5f);
  if (bf16) {
    cast_to_bf16(ConstVec(a.data(), n * n), Bf16Vec(ha.data(), n * n));
    cast_to_bf16(ConstVec(b.data(), n * n), Bf16Vec(hb.data(), n * n));
  }
  const ConstMat A(a.data(), n, n), B(b.data(), n, n);
  const ConstBf16Mat HA(ha.data(), n, n), HB(hb.data(), n, n);
  const Mat C(c.data(), n, n);
  auto run = [&] {
    if (bf16)
      kernels::gemm_bf16("N", "N", 1.f, HA, HB, 0.f, C);
    else
      kernels::gemm("N", "N", 1.f, A, B, 0.f, C);
  };
  run();  // warm-up
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    ExecSpace().fence();
    const double t0 = now_s();
    run();
    ExecSpace().fence();
    best = std::min(best, now_s() - t0);
  }
  return 2.0 * n * n * n / best;
}

}  // namespace fsdp
