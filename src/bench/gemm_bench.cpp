// SPDX-License-Identifier: MIT
#include "bench/gemm_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

#include "config/load_config.hpp"
#include "core/bf16.hpp"
#include "core/check.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "model/gemm/gemm.hpp"
#include "model/gemm/gemm_paths.hpp"
#include "model/gemm/onednn_matmul.hpp"
#include "train/trainer.hpp"

namespace fsdp::bench {
namespace {

using kernels::gemm_paths::Shape;
namespace onednn = kernels::onednn;

// Median seconds of `iters` calls after one warm-up.
double median_seconds(int iters, const std::function<void()>& call) {
  call();
  Kokkos::fence();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    Kokkos::fence();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Operands of one shape, stored as the model stores them (op 'T' reads a transposed matrix).
struct Operands {
  std::int64_t a_rows, a_cols, b_rows, b_cols;
  FlatView a, b, c;
  Kokkos::View<std::uint16_t*, DeviceSpace> a16, b16;

  explicit Operands(const Shape& s)
      : a_rows(s.ta == 'N' ? s.M : s.K), a_cols(s.ta == 'N' ? s.K : s.M),
        b_rows(s.tb == 'N' ? s.K : s.N), b_cols(s.tb == 'N' ? s.N : s.K),
        a("gemm_bench::a", a_rows * a_cols), b("gemm_bench::b", b_rows * b_cols),
        c("gemm_bench::c", s.M * s.N), a16("gemm_bench::a16", a_rows * a_cols),
        b16("gemm_bench::b16", b_rows * b_cols) {
    Kokkos::deep_copy(a, 0.5f);
    Kokkos::deep_copy(b, 0.25f);
    cast_to_bf16(ConstVec(a.data(), a.extent(0)), Bf16Vec(a16.data(), a16.extent(0)));
    cast_to_bf16(ConstVec(b.data(), b.extent(0)), Bf16Vec(b16.data(), b16.extent(0)));
  }
  ConstMat af() const { return ConstMat(a.data(), a_rows, a_cols); }
  ConstMat bf() const { return ConstMat(b.data(), b_rows, b_cols); }
  ConstBf16Mat ah() const { return ConstBf16Mat(a16.data(), a_rows, a_cols); }
  ConstBf16Mat bh() const { return ConstBf16Mat(b16.data(), b_rows, b_cols); }
};

std::string rate(double flops, double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", flops / seconds / 1e9);
  return buf;
}

}  // namespace

int run_gemm_bench(MPI_Comm world, const GemmBenchOptions& o) {
  int size = 1, rank = 0;
  MPI_Comm_size(world, &size);
  MPI_Comm_rank(world, &rank);
  if (size != 1) fatal("fsdp-bench gemm: run it on one rank (it times one core's or GPU's GEMMs)");
  RunConfig cfg = load_config(o.config, o.sets);
  cfg.fsdp.mixed_precision = "bf16";
  cfg.fsdp.gemm_dtype = "bf16";
  cfg.train.steps = 1;
  cfg.eval.every = 0;
  cfg.eval.sequences = 0;
  cfg.checkpoint.every = 0;
  TrainOptions quiet;
  quiet.log = false;
  {
    Trainer t(cfg, world, quiet);
    kernels::gemm_paths::reset();
    t.run();
  }
  std::vector<Shape> shapes;
  for (const Shape& s : kernels::gemm_paths::shapes())
    if (s.bf16) shapes.push_back(s);

  const bool dnnl = onednn::built(), dnnl_bf16 = onednn::support(onednn::Inputs::BF16).fast;
  std::printf("fsdp-bench gemm: the bf16 GEMM shapes of %s, median of %d calls each\n",
              o.config.c_str(), o.iters);
  std::printf("#   fp32 GEMM: %s; oneDNN fp32 matmul: %s; oneDNN bf16 matmul: %s\n",
              kernels::gemm_paths::fp32_path().c_str(),
              dnnl ? onednn::support(onednn::Inputs::F32).impl.c_str() : "not in this build",
              onednn::support(onednn::Inputs::BF16).impl.c_str());
  std::printf("#   fsdp bf16: %s\n", kernels::gemm_bf16_path().c_str());
  std::printf("%-4s %7s %7s %7s %12s %12s %12s %12s %9s\n", "op", "M", "N", "K", "fp32 GF/s",
              "dnnl32 GF/s", "dnnl16 GF/s", "fsdp16 GF/s", "fsdp/ref");
  for (const Shape& s : shapes) {
    const Operands x(s);
    const double flops = 2.0 * s.M * s.N * s.K;
    const char ta[2] = {s.ta, 0}, tb[2] = {s.tb, 0};
    const Mat c(x.c.data(), s.M, s.N);
    const double t32 =
        median_seconds(o.iters, [&] { kernels::gemm(ta, tb, 1.f, x.af(), x.bf(), 0.f, c); });
    const double t16 = median_seconds(
        o.iters, [&] { kernels::gemm_bf16(ta, tb, 1.f, x.ah(), x.bh(), 0.f, c); });
    double td32 = 0, td16 = 0;
    if (dnnl)
      td32 = median_seconds(o.iters, [&] {
        onednn::matmul(onednn::Inputs::F32, s.ta, s.tb, s.M, s.N, s.K, 1.f, x.a.data(), x.a_cols,
                       x.b.data(), x.b_cols, 0.f, x.c.data(), s.N);
      });
    if (dnnl_bf16)
      td16 = median_seconds(o.iters, [&] {
        onednn::matmul(onednn::Inputs::BF16, s.ta, s.tb, s.M, s.N, s.K, 1.f, x.a16.data(),
                       x.a_cols, x.b16.data(), x.b_cols, 0.f, x.c.data(), s.N);
      });
    // fsdp's bf16 call against oneDNN's bf16 matmul, or against the fp32 GEMM it widens into.
    const double ref = td16 > 0 ? td16 : t32;
    std::printf("%c%c   %7lld %7lld %7lld %12s %12s %12s %12s %8.2f%s\n", s.ta, s.tb,
                (long long)s.M, (long long)s.N, (long long)s.K, rate(flops, t32).c_str(),
                td32 > 0 ? rate(flops, td32).c_str() : "n/a",
                td16 > 0 ? rate(flops, td16).c_str() : "n/a", rate(flops, t16).c_str(),
                ref / t16, td16 > 0 ? "" : "*");
  }
  if (!dnnl_bf16)
    std::printf("# * no oneDNN bf16 kernel here: fsdp/ref is against the fp32 GEMM it widens into\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace fsdp::bench
