// SPDX-License-Identifier: MIT
// The fused (FlashAttention-2) kernel against a float64 reference written here, and against the
// materialised path, over T that is and is not a multiple of the tile, head sizes 16-128 (24 is
// not a multiple of the register tile: zero-padded columns), and grouped-query heads (KV = H,
// H/2, 1); both backward schedules (the CPU's one pass and the GPU's two) run on the CPU; bf16
// inputs against the float64 result of the same rounded inputs.
//
// The bound, per element: with u = 2^-24, a score s = (scale q) . k carries at most
// ds = (D + 2) u scale max_{t,j} sum_d |q_td k_jd| of absolute error, which perturbs each
// probability by at most 2 ds relatively (the exponential and the normalisation); each fp32 sum
// of n terms adds n u times the sum of the terms' magnitudes. So every output element x is
// within 4 (ds + (T + D + 8) u) |x|_abs of the exact value, where |x|_abs is x's formula
// evaluated on magnitudes (o_abs = sum p |v|, dS_abs = p (|dO| |v| + |dO| |o|), ...), and the
// factor 4 covers exp_fast's few ulps and the second-order terms. A missing rescale, P in place
// of P^T or a tile too few on the diagonal move elements by O(|x|), far past it.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "core/bf16.hpp"
#include "model/attention.hpp"
#include "model/flash_attention.hpp"

using namespace fsdp;
namespace k = fsdp::kernels;

namespace {

using Dvec = std::vector<double>;

// Q, K, V in one row-major matrix [B*T, (H + 2 KV) D]: q | k | v (Llama's fused projection;
// with KV = H it is GPT-2's qkv).
struct Problem {
  int B, T, H, KV, D;
  std::vector<int> starts = {};  // packed documents: each row's document start; empty: none
  std::int64_t width() const { return std::int64_t(H + 2 * KV) * D; }
  std::int64_t rows() const { return std::int64_t(B) * T; }
  std::int64_t qcol(int h) const { return std::int64_t(h) * D; }
  std::int64_t kcol(int g) const { return std::int64_t(H + g) * D; }
  std::int64_t vcol(int g) const { return std::int64_t(H + KV + g) * D; }
};

struct Grads {
  Dvec o, dqkv;          // exact (double) output and gradients
  Dvec o_abs, dqkv_abs;  // the same formulas on magnitudes
  double ds = 0;         // the worst fp32 score error
};

// Causal attention in double, straight from the definitions, with magnitudes alongside.
Grads reference(const Problem& pb, const std::vector<float>& x, const std::vector<float>& dout) {
  const int T = pb.T, D = pb.D, H = pb.H, G = H / pb.KV;
  const std::int64_t W = pb.width(), C = std::int64_t(H) * D;
  const double scale = 1.0 / std::sqrt(double(D)), u = std::ldexp(1.0, -24);
  Grads r;
  r.o.assign(pb.rows() * C, 0);
  r.o_abs = r.o;
  r.dqkv.assign(pb.rows() * W, 0);
  r.dqkv_abs = r.dqkv;
  auto at = [&](int b, int t, std::int64_t col) { return double(x[(std::int64_t(b) * T + t) * W + col]); };
  std::vector<double> p(T), dp(T), ds(T), dsa(T);
  for (int b = 0; b < pb.B; ++b)
    for (int h = 0; h < H; ++h) {
      const int g = h / G;
      for (int t = 0; t < T; ++t) {
        const std::int64_t orow = (std::int64_t(b) * T + t) * C + h * D;
        const std::int64_t grow_t = (std::int64_t(b) * T + t) * W;
        const int lo = pb.starts.empty() ? 0 : pb.starts[std::size_t(b) * T + t];
        double mx = -1e300;
        for (int j = lo; j <= t; ++j) {
          double s = 0, sa = 0;
          for (int d = 0; d < D; ++d) {
            s += at(b, t, pb.qcol(h) + d) * at(b, j, pb.kcol(g) + d);
            sa += std::abs(at(b, t, pb.qcol(h) + d) * at(b, j, pb.kcol(g) + d));
          }
          p[j] = s * scale;
          r.ds = std::max(r.ds, (D + 2) * u * scale * sa);
          mx = std::max(mx, p[j]);
        }
        double sum = 0;
        for (int j = lo; j <= t; ++j) sum += (p[j] = std::exp(p[j] - mx));
        for (int j = lo; j <= t; ++j) p[j] /= sum;
        for (int d = 0; d < D; ++d)
          for (int j = lo; j <= t; ++j) {
            r.o[orow + d] += p[j] * at(b, j, pb.vcol(g) + d);
            r.o_abs[orow + d] += p[j] * std::abs(at(b, j, pb.vcol(g) + d));
          }
        // Backward of this row: dP = dO V^T, dS = P (dP - sum P dP).
        const float* dy = &dout[orow];
        double dot = 0, dot_abs = 0;
        for (int j = lo; j <= t; ++j) {
          dp[j] = 0;
          double dpa = 0;
          for (int d = 0; d < D; ++d) {
            dp[j] += dy[d] * at(b, j, pb.vcol(g) + d);
            dpa += std::abs(dy[d] * at(b, j, pb.vcol(g) + d));
          }
          dot += p[j] * dp[j];
          dsa[j] = dpa;
        }
        for (int d = 0; d < D; ++d) dot_abs += std::abs(dy[d]) * r.o_abs[orow + d];
        for (int j = lo; j <= t; ++j) {
          ds[j] = p[j] * (dp[j] - dot);
          dsa[j] = p[j] * (dsa[j] + dot_abs + std::abs(dp[j] - dot));
        }
        for (int j = lo; j <= t; ++j) {
          const std::int64_t grow_j = (std::int64_t(b) * T + j) * W;
          for (int d = 0; d < D; ++d) {
            const double q = at(b, t, pb.qcol(h) + d), kk = at(b, j, pb.kcol(g) + d);
            r.dqkv[grow_t + pb.qcol(h) + d] += scale * ds[j] * kk;
            r.dqkv_abs[grow_t + pb.qcol(h) + d] += scale * dsa[j] * std::abs(kk);
            r.dqkv[grow_j + pb.kcol(g) + d] += scale * ds[j] * q;
            r.dqkv_abs[grow_j + pb.kcol(g) + d] += scale * dsa[j] * std::abs(q);
            r.dqkv[grow_j + pb.vcol(g) + d] += p[j] * dy[d];
            r.dqkv_abs[grow_j + pb.vcol(g) + d] += p[j] * std::abs(dy[d]);
          }
        }
      }
    }
  return r;
}

std::vector<float> randn(std::size_t n, std::mt19937& g) {
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> h(n);
  for (float& v : h) v = d(g);
  return h;
}

FlatView device(const std::vector<float>& h) {
  FlatView v("test::buffer", h.size());
  Kokkos::deep_copy(v, HostConstVec(h.data(), h.size()));
  return v;
}

std::vector<float> host(const FlatView& v) {
  std::vector<float> h(v.extent(0));
  Kokkos::deep_copy(HostVec(h.data(), h.size()), v);
  return h;
}

double bound_scale(const Problem& pb, const Grads& r) {
  return 4.0 * (r.ds + (pb.T + pb.D + 8) * std::ldexp(1.0, -24));
}

// Every element of got within factor * bound_scale * abs of want.
void within(const std::vector<float>& got, const Dvec& want, const Dvec& abs, double eps,
            const char* what) {
  REQUIRE(got.size() == want.size());
  std::size_t worst = 0;
  double worst_ratio = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(double(got[i]) - want[i]), lim = eps * abs[i] + 1e-30;
    if (err / lim > worst_ratio) worst_ratio = err / lim, worst = i;
  }
  INFO(what << ": worst element " << worst << " got " << got[worst] << " want " << want[worst]
            << " (error / bound " << worst_ratio << ")");
  CHECK(worst_ratio <= 1.0);
}

struct Fused {
  std::vector<float> out, lse, dqkv;
};

// Packed documents' starts on the device (empty: none).
Kokkos::View<int*, DeviceSpace> device_starts(const std::vector<int>& starts) {
  Kokkos::View<int*, DeviceSpace> d("test::starts", starts.size());
  auto h = Kokkos::create_mirror_view(d);
  for (std::size_t i = 0; i < starts.size(); ++i) h(i) = starts[i];
  Kokkos::deep_copy(d, h);
  return d;
}

template <class In>
Fused run_fused(const Problem& pb, const In* x, const std::vector<float>& dout, bool own_dq) {
  const std::int64_t W = pb.width(), C = std::int64_t(pb.H) * pb.D;
  const auto starts = device_starts(pb.starts);
  const k::AttnDims dims{pb.B, pb.T, pb.H, pb.KV, pb.D,
                         pb.starts.empty() ? nullptr : starts.data()};
  const k::QkvRows<In> rows{x + pb.qcol(0), x + pb.kcol(0), x + pb.vcol(0), W, W, W};
  FlatView out("test::out", pb.rows() * C), lse("test::lse", std::int64_t(pb.B) * pb.H * pb.T);
  FlatView dq("test::dqkv", pb.rows() * W);
  FlatView dy = device(dout);
  k::FlashPlan plan = k::flash_plan(pb.D);
  plan.own_dq = own_dq;
  k::flash_attention_forward(dims, rows, {out.data(), C}, lse.data(), plan);
  Kokkos::deep_copy(dq, 7.f);  // assigned, not accumulated: stale values must vanish
  k::flash_attention_backward(dims, rows, {out.data(), C}, {dy.data(), C}, lse.data(),
                              {dq.data() + pb.qcol(0), dq.data() + pb.kcol(0),
                               dq.data() + pb.vcol(0), W, W, W},
                              plan);
  Kokkos::fence();
  return {host(out), host(lse), host(dq)};
}

// Both copies of the CPU kernels where the build has two (flash_isa: AVX-512 where this CPU has
// it, and the build's own target), each with both backward schedules, against the reference.
void check_every_copy(const Problem& pb, const FlatView& xd, const std::vector<float>& dout,
                      const Grads& ref, double eps) {
  for (const char* isa : {"auto", "base"}) {
    ::setenv("FSDP_FLASH_ISA", isa, 1);
    CAPTURE(k::flash_isa());
    for (bool own_dq : {true, false}) {
      CAPTURE(own_dq);
      const Fused f = run_fused(pb, xd.data(), dout, own_dq);
      within(f.out, ref.o, ref.o_abs, eps, "output");
      within(f.dqkv, ref.dqkv, ref.dqkv_abs, eps, "dq|dk|dv");
    }
  }
  ::unsetenv("FSDP_FLASH_ISA");
}

}  // namespace

TEST_CASE("fused attention matches float64 and the materialised path", "[attention][flash]") {
  const int T = GENERATE(1, 7, 64, 333, 1024);
  const int D = GENERATE(16, 24, 64, 128);  // 24: padded to the register tile (32)
  const int H = 4, KV = GENERATE(4, 2, 1), B = T <= 64 ? 2 : 1;
  const Problem pb{B, T, H, KV, D};
  CAPTURE(T, D, H, KV, B);
  std::mt19937 gen(std::uint32_t(T * 1000 + D * 10 + KV));
  const std::vector<float> x = randn(pb.rows() * pb.width(), gen);
  const std::vector<float> dout = randn(pb.rows() * H * D, gen);
  const Grads ref = reference(pb, x, dout);
  const double eps = bound_scale(pb, ref);
  FlatView xd = device(x);

  check_every_copy(pb, xd, dout, ref, eps);

  if (KV == H) {  // the materialised path takes GPT-2's packed qkv
    const std::int64_t C = std::int64_t(H) * D, BT = pb.rows();
    FlatView out("test::out", BT * C), att("test::att", std::int64_t(B) * H * T * T);
    FlatView dq("test::dqkv", BT * 3 * C), dy = device(dout);
    k::attention_forward(Mat(out.data(), BT, C), Att3(att.data(), B * H, T, T),
                         ConstMat(xd.data(), BT, 3 * C), B, T, H);
    FlatView work("test::work", k::attention_work_size(T, H));
    k::attention_backward(Mat(dq.data(), BT, 3 * C), ConstMat(dy.data(), BT, C),
                          ConstAtt3(att.data(), B * H, T, T), ConstMat(xd.data(), BT, 3 * C), B,
                          T, H, Vec(work.data(), work.extent(0)));
    const Fused f = run_fused(pb, xd.data(), dout, true);
    // Two results each within the bound of the exact one are within twice it of each other.
    const std::vector<float> mo = host(out), md = host(dq);
    const Dvec mat_out(mo.begin(), mo.end()), mat_dq(md.begin(), md.end());
    within(f.out, mat_out, ref.o_abs, 2 * eps, "output vs materialised");
    within(f.dqkv, mat_dq, ref.dqkv_abs, 2 * eps, "dqkv vs materialised");
  }
}

// data.packing = documents: row t sees keys starts[t]..t. Documents of 1 token, documents
// inside one tile, and documents spanning several tiles (whole key tiles skipped, tiles
// partly masked), in both backward schedules and both instruction-set copies; the materialised
// path (GPT-2's packed layout) takes the same starts.
TEST_CASE("fused attention with packed documents matches float64", "[attention][flash]") {
  const int T = GENERATE(70, 333), D = GENERATE(16, 64), KV = GENERATE(4, 1);
  const int H = 4, B = 2;
  Problem pb{B, T, H, KV, D};
  CAPTURE(T, D, KV);
  std::mt19937 gen(std::uint32_t(T * 7 + D + KV));
  for (int b = 0; b < B; ++b) {
    int start = 0;
    for (int t = 0; t < T; ++t) {
      // Sequence 0: short documents (1-9 tokens); sequence 1: long ones (up to 150).
      if (t > 0 && gen() % (b == 0 ? 5 : 150) == 0) start = t;
      pb.starts.push_back(start);
    }
  }
  const std::vector<float> x = randn(pb.rows() * pb.width(), gen);
  const std::vector<float> dout = randn(pb.rows() * H * D, gen);
  const Grads ref = reference(pb, x, dout);
  const double eps = bound_scale(pb, ref);
  FlatView xd = device(x);
  check_every_copy(pb, xd, dout, ref, eps);
  if (KV == H) {
    const std::int64_t C = std::int64_t(H) * D, BT = pb.rows();
    const auto st = device_starts(pb.starts);
    FlatView out("out", BT * C), att("att", BT * H * T), dq("dq", BT * 3 * C), work("w", k::attention_work_size(T, H));
    k::attention_forward(Mat(out.data(), BT, C), Att3(att.data(), B * H, T, T),
                         ConstMat(xd.data(), BT, 3 * C), B, T, H, H, st.data());
    FlatView dy = device(dout);
    k::attention_backward(Mat(dq.data(), BT, 3 * C), ConstMat(dy.data(), BT, C),
                          ConstAtt3(att.data(), B * H, T, T), ConstMat(xd.data(), BT, 3 * C), B, T,
                          H, H, Vec(work.data(), work.extent(0)), st.data());
    within(host(out), ref.o, ref.o_abs, eps, "materialised output");
    within(host(dq), ref.dqkv, ref.dqkv_abs, eps, "materialised dq|dk|dv");
  }
}

TEST_CASE("fused attention keeps the log-sum-exp of every row", "[attention][flash]") {
  const Problem pb{1, 100, 2, 1, 16};
  std::mt19937 gen(5);
  const std::vector<float> x = randn(pb.rows() * pb.width(), gen);
  FlatView xd = device(x);
  const Fused f = run_fused(pb, xd.data(), std::vector<float>(pb.rows() * 2 * 16, 0.f), true);
  const double scale = 1.0 / 4.0;
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < pb.T; ++t) {
      double mx = -1e300;
      std::vector<double> s(t + 1);
      for (int j = 0; j <= t; ++j) {
        double v = 0;
        for (int d = 0; d < 16; ++d)
          v += double(x[t * pb.width() + pb.qcol(h) + d]) * x[j * pb.width() + pb.kcol(0) + d];
        mx = std::max(mx, s[j] = v * scale);
      }
      double sum = 0;
      for (double v : s) sum += std::exp(v - mx);
      INFO("head " << h << " row " << t);
      CHECK(std::abs(f.lse[std::size_t(h) * pb.T + t] - (mx + std::log(sum))) <= 1e-5 * (1 + std::abs(mx)));
    }
}

TEST_CASE("fused attention takes bf16 inputs", "[attention][flash]") {
  const int T = GENERATE(7, 333), KV = GENERATE(4, 1);
  const Problem pb{1, T, 4, KV, 64};
  CAPTURE(T, KV);
  std::mt19937 gen(std::uint32_t(T + KV));
  std::vector<float> x = randn(pb.rows() * pb.width(), gen);
  std::vector<std::uint16_t> xb(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    xb[i] = to_bf16(x[i]);
    x[i] = from_bf16(xb[i]);  // the reference sees exactly the rounded values
  }
  const std::vector<float> dout = randn(pb.rows() * 4 * 64, gen);
  const Grads ref = reference(pb, x, dout);
  Kokkos::View<std::uint16_t*, DeviceSpace> xbd("test::bf16", xb.size());
  Kokkos::deep_copy(xbd, Kokkos::View<const std::uint16_t*, HostSpace, Unmanaged>(xb.data(), xb.size()));
  const Fused f = run_fused(pb, xbd.data(), dout, true);
  const double eps = bound_scale(pb, ref);
  within(f.out, ref.o, ref.o_abs, eps, "output");
  within(f.dqkv, ref.dqkv, ref.dqkv_abs, eps, "dq|dk|dv");
}
