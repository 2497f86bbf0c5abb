// SPDX-License-Identifier: MIT
#include "model/gemm/gemm_peak.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "core/bf16.hpp"
#include "core/clock.hpp"
#include "core/types.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "model/gemm/gemm.hpp"

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

double measure_step_gemm_flops(const std::vector<kernels::gemm_paths::Use>& mix,
                               std::string* what) {
  const kernels::gemm_paths::Quiet quiet;  // the probe's calls are not the model's
  const double start = now_s();
  double flops = 0.0, seconds = 0.0;  // of the mix at its full row counts
  long calls = 0;
  for (const kernels::gemm_paths::Use& u : mix) {
    const kernels::gemm_paths::Shape& s = u.shape;
    std::int64_t M = s.M, N = s.N;
    while (2.0 * double(M) * double(N) * double(s.K) > kProbeMaxFlops && std::max(M, N) > 1024)
      (M >= N ? M : N) = (std::max(M, N) + 1) / 2;
    const std::int64_t ar = s.ta == 'N' ? M : s.K, ac = s.ta == 'N' ? s.K : M;
    const std::int64_t br = s.tb == 'N' ? s.K : N, bc = s.tb == 'N' ? N : s.K;
    FlatView a("peak::a", ar * ac), b("peak::b", br * bc), c("peak::c", M * N);
    Kokkos::View<std::uint16_t*, DeviceSpace> ha("peak::a_bf16", s.bf16 ? ar * ac : 0),
        hb("peak::b_bf16", s.bf16 ? br * bc : 0);
    Kokkos::deep_copy(a, 0.5f);
    Kokkos::deep_copy(b, 0.25f);
    if (s.bf16) {
      cast_to_bf16(ConstVec(a.data(), ar * ac), Bf16Vec(ha.data(), ar * ac));
      cast_to_bf16(ConstVec(b.data(), br * bc), Bf16Vec(hb.data(), br * bc));
    }
    const char ta[2] = {s.ta, 0}, tb[2] = {s.tb, 0};
    const Mat C(c.data(), M, N);
    auto run = [&] {
      if (s.bf16)
        kernels::gemm_bf16(ta, tb, 1.f, ConstBf16Mat(ha.data(), ar, ac),
                           ConstBf16Mat(hb.data(), br, bc), 0.f, C);
      else
        kernels::gemm(ta, tb, 1.f, ConstMat(a.data(), ar, ac), ConstMat(b.data(), br, bc), 0.f, C);
      ExecSpace().fence();
    };
    run();  // warm-up: pages touched, the library's own first-call set-up done
    double best = 1e30, spent = 0.0;
    for (int rep = 0; rep < 2 || spent < kProbeSecondsPerShape; ++rep) {
      const double t0 = now_s();
      run();
      const double dt = now_s() - t0;
      best = std::min(best, dt);
      spent += dt;
    }
    flops += double(u.calls) * 2.0 * double(s.M) * double(s.N) * double(s.K);
    // The rows and columns left out, at the rate measured.
    seconds += double(u.calls) * best * (double(s.M) / double(M)) * (double(s.N) / double(N));
    calls += u.calls;
  }
  if (seconds <= 0.0) {  // no GEMM in the step (a model of another kind): the square product
    if (what) *what = "a 1024^3 fp32 GEMM (the step ran none)";
    return measure_gemm_flops();
  }
  if (what) {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "the step's own GEMMs (%zu shapes, %ld calls; each shape warm, its best of "
                  "two calls or more and %.0f ms, at most %.1f GFLOP a call; %.2f s)",
                  mix.size(), calls, 1e3 * kProbeSecondsPerShape, kProbeMaxFlops / 1e9,
                  now_s() - start);
    *what = buf;
  }
  return flops / seconds;
}

}  // namespace fsdp
