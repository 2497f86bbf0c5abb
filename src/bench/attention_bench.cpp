// SPDX-License-Identifier: MIT
#include "bench/attention_bench.hpp"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>

#include "core/check.hpp"
#include "model/attention.hpp"
#include "model/flash_attention.hpp"

namespace fsdp::bench {
namespace {

double seconds(const std::function<void()>& call) {
  Kokkos::fence();
  const auto t0 = std::chrono::steady_clock::now();
  call();
  Kokkos::fence();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Values of a trained model's scale (|s| of a few units): the timing does not depend on them.
// (A free function: nvcc allows no device lambda in a constructor.)
void fill_pattern(const FlatView& x, std::int64_t prime) {
  Kokkos::parallel_for(
      "attention_bench::fill", Kokkos::RangePolicy<ExecSpace>(0, std::int64_t(x.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i) { x(i) = 0.01f * float((i * prime) % 201 - 100); });
}

// One shape's buffers for both paths: q | k | v rows of width (H + 2 KV) D.
struct Buffers {
  int B, T, H, KV, D;
  std::int64_t BT, C, W;
  FlatView x, out, dout, dx, lse;
  Buffers(int B_, int T_, int H_, int KV_, int D_)
      : B(B_), T(T_), H(H_), KV(KV_), D(D_), BT(std::int64_t(B_) * T_), C(std::int64_t(H_) * D_),
        W(std::int64_t(H_ + 2 * KV_) * D_), x("attention_bench::x", BT * W),
        out("attention_bench::out", BT * C), dout("attention_bench::dout", BT * C),
        dx("attention_bench::dx", BT * W), lse("attention_bench::lse", BT * H_) {
    fill_pattern(x, 7919);
    fill_pattern(dout, 104729);
  }
};

struct Times {
  std::vector<double> fwd, bwd;
  double fwd_ms() const { return 1e3 * median(fwd); }
  double bwd_ms() const { return 1e3 * median(bwd); }
};

// A path's forward and backward calls on the shared buffers.
struct Path {
  std::function<void()> fwd, bwd;
  Times t;
  void time_once() {
    t.fwd.push_back(seconds(fwd));
    t.bwd.push_back(seconds(bwd));
  }
};

Path fused_path(Buffers& b) {
  const kernels::AttnDims dims{b.B, b.T, b.H, b.KV, b.D};
  const kernels::FlashPlan plan = kernels::flash_plan(b.D);
  const float* x = b.x.data();
  const std::int64_t kv = std::int64_t(b.KV) * b.D;
  const kernels::QkvRows<float> rows{x, x + b.C, x + b.C + kv, b.W, b.W, b.W};
  float* dx = b.dx.data();
  const kernels::QkvGrads grads{dx, dx + b.C, dx + b.C + kv, b.W, b.W, b.W};
  Path p;
  p.fwd = [&b, dims, rows, plan] {
    kernels::flash_attention_forward(dims, rows, {b.out.data(), b.C}, b.lse.data(), plan);
  };
  p.bwd = [&b, dims, rows, grads, plan] {
    kernels::flash_attention_backward(dims, rows, {b.out.data(), b.C}, {b.dout.data(), b.C},
                                      b.lse.data(), grads, plan);
  };
  return p;
}

// The materialised path's own buffers: the probabilities and the score-gradient work space.
struct Materialized {
  FlatView att, work;
  explicit Materialized(const Buffers& b)
      : att("attention_bench::att", std::int64_t(b.B) * b.H * b.T * b.T),
        work("attention_bench::work", kernels::attention_work_size(b.T, b.H)) {}
};

Path materialized_path(Buffers& b, Materialized& m) {
  Path p;
  p.fwd = [&b, &m] {
    kernels::attention_forward(Mat(b.out.data(), b.BT, b.C),
                               Att3(m.att.data(), b.B * b.H, b.T, b.T),
                               ConstMat(b.x.data(), b.BT, b.W), b.B, b.T, b.H, b.KV);
  };
  p.bwd = [&b, &m] {
    kernels::attention_backward(Mat(b.dx.data(), b.BT, b.W), ConstMat(b.dout.data(), b.BT, b.C),
                                ConstAtt3(m.att.data(), b.B * b.H, b.T, b.T),
                                ConstMat(b.x.data(), b.BT, b.W), b.B, b.T, b.H, b.KV,
                                Vec(m.work.data(), m.work.extent(0)));
  };
  return p;
}

std::vector<float> host_copy(const FlatView& v) {
  std::vector<float> h(v.extent(0));
  Kokkos::deep_copy(HostVec(h.data(), h.size()), v);
  return h;
}

// max |a - b| / max |b|: the error relative to the tensor's scale.
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, double(std::abs(a[i] - b[i])));
    scale = std::max(scale, double(std::abs(b[i])));
  }
  return scale > 0 ? err / scale : err;
}

// --check: one forward and backward of each path on the same inputs; the fused results against
// the materialised ones (the kernels' own tests bound them against float64 on a CPU; this runs
// on whatever the build's device is).
bool check_paths(Buffers& b, Path& mat, Path& fused, double tol) {
  mat.fwd();
  mat.bwd();
  Kokkos::fence();
  const std::vector<float> mo = host_copy(b.out), mdx = host_copy(b.dx);
  Kokkos::deep_copy(b.out, 0.f);
  Kokkos::deep_copy(b.dx, 0.f);
  fused.fwd();
  fused.bwd();
  Kokkos::fence();
  const double eo = relative_error(host_copy(b.out), mo), ed = relative_error(host_copy(b.dx), mdx);
  const bool ok = eo <= tol && ed <= tol;
  std::printf("check T=%d: fused vs materialised, max error / max value: output %.2e, "
              "dq|dk|dv %.2e (bound %.0e): %s\n",
              b.T, eo, ed, tol, ok ? "ok" : "FAILED");
  return ok;
}

}  // namespace

int run_attention_bench(MPI_Comm world, const AttentionBenchOptions& o) {
  int size = 1;
  MPI_Comm_size(world, &size);
  if (size != 1) fatal("fsdp-bench attention: run it on one rank (it times one core's or GPU's kernels)");
  const int KV = o.kv_heads > 0 ? o.kv_heads : o.heads;
  if (o.heads % KV != 0) fatal("fsdp-bench attention: --heads must be a multiple of --kv-heads");
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  const bool gqa_materialized = KV == o.heads;  // the GPU's batched kernel: packed heads only
#else
  const bool gqa_materialized = true;  // the blocked CPU kernel reads grouped heads in place
#endif
  const bool fused = o.path != "materialized", mat = o.path != "fused" && gqa_materialized;
  const kernels::FlashPlan plan = kernels::flash_plan(o.head_dim);
  std::printf("fsdp-bench attention: causal, B %d, H %d, KV %d, D %d, median of %d; fused tiles "
              "%dx%d (%s, %zu kB scratch per team; CPU kernels: %s)\n",
              o.batch, o.heads, KV, o.head_dim, o.iters, plan.br, plan.bc,
              plan.own_dq ? "one backward pass" : "two backward passes",
              std::max(plan.forward_bytes(), plan.backward_bytes()) / 1024, kernels::flash_isa());
  if (!gqa_materialized)
    std::printf("# the GPU's materialised kernel has no grouped-query form: fused only\n");
  std::printf("%6s %-13s %10s %10s %10s %10s %10s %18s\n", "T", "path", "fwd ms", "bwd ms",
              "fwd GF/s", "bwd GF/s", "total ms", "mat/fused [range]");
  bool failed = false;
  for (int T : o.seq_lens) {
    Buffers b(o.batch, T, o.heads, KV, o.head_dim);
    const double causal = 4.0 * o.batch * o.heads * o.head_dim * (double(T) * (T + 1) / 2);
    std::optional<Materialized> mbuf;
    std::vector<Path> paths;  // timed in turn, one call of each per round: paired figures
    if (mat) {
      mbuf.emplace(b);
      paths.push_back(materialized_path(b, *mbuf));
    }
    if (fused) paths.push_back(fused_path(b));
    if (o.check) {
      if (!(fused && mat)) fatal("fsdp-bench attention --check: needs both paths (KV = H, --path both)");
      if (!check_paths(b, paths[0], paths[1], 1e-4)) failed = true;
    }
    for (Path& p : paths) {  // warm-up
      p.fwd();
      p.bwd();
    }
    for (int i = 0; i < o.iters; ++i)
      for (Path& p : paths) p.time_once();
    auto row = [&](const char* name, const Times& t, const char* ratio) {
      std::printf("%6d %-13s %10.2f %10.2f %10.1f %10.1f %10.2f %18s\n", T, name, t.fwd_ms(),
                  t.bwd_ms(), causal / t.fwd_ms() / 1e6, 2 * causal / t.bwd_ms() / 1e6,
                  t.fwd_ms() + t.bwd_ms(), ratio);
    };
    char ratio[32] = "";
    if (fused && mat) {
      // The median of the per-round ratios: each round's two figures ran back to back.
      std::vector<double> r;
      for (int i = 0; i < o.iters; ++i)
        r.push_back((paths[0].t.fwd[i] + paths[0].t.bwd[i]) /
                    (paths[1].t.fwd[i] + paths[1].t.bwd[i]));
      std::sort(r.begin(), r.end());
      std::snprintf(ratio, sizeof ratio, "%.2f [%.2f-%.2f]", median(r), r.front(), r.back());
    }
    if (mat) row("materialized", paths[0].t, "");
    if (fused) row("fused", paths.back().t, ratio);
    std::fflush(stdout);
  }
  return failed ? 1 : 0;
}

}  // namespace fsdp::bench
