// SPDX-License-Identifier: MIT
// GEMMs with bf16 inputs (fsdp.gemm_dtype = bf16) against a float64 product of the same bf16
// values: every transpose pair, with beta, over a K long enough that a dropped accumulation or
// a swapped operand is far outside the fp32 rounding bound. Then the model's helper
// (Bf16Gemms): a linear layer's forward and backward and the tied head's chunked backward
// against fp32 GEMMs of the rounded operands.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "core/bf16.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "model/gemm/gemm.hpp"

using namespace fsdp;

namespace {

// Host values that are exactly bf16, and their bf16 storage on the device.
struct Operand {
  std::size_t rows, cols;
  std::vector<float> v;           // bf16 values, widened
  Kokkos::View<std::uint16_t*, Kokkos::LayoutRight, DeviceSpace> dev;
  float at(std::size_t r, std::size_t c) const { return v[r * cols + c]; }
  ConstBf16Mat mat() const { return ConstBf16Mat(dev.data(), rows, cols); }
};

Operand operand(std::size_t rows, std::size_t cols, std::mt19937& g) {
  std::normal_distribution<float> d(0.f, 1.f);
  Operand o{rows, cols, std::vector<float>(rows * cols), {}};
  std::vector<std::uint16_t> h(rows * cols);
  for (std::size_t i = 0; i < h.size(); ++i) {
    h[i] = to_bf16(d(g));
    o.v[i] = from_bf16(h[i]);
  }
  o.dev = decltype(o.dev)("operand", h.size());
  Kokkos::deep_copy(o.dev, Kokkos::View<const std::uint16_t*, HostSpace, Unmanaged>(h.data(), h.size()));
  return o;
}

std::vector<float> to_host(const FlatView& v) {
  std::vector<float> h(v.extent(0));
  Kokkos::deep_copy(HostVec(h.data(), h.size()), v);
  return h;
}

FlatView on_device(const std::vector<float>& h) {
  FlatView v("values", h.size());
  Kokkos::deep_copy(v, HostConstVec(h.data(), h.size()));
  return v;
}

}  // namespace

TEST_CASE("a bf16 GEMM accumulates the exact bf16 products in fp32", "[gemm][bf16]") {
  std::mt19937 g(11);
  const bool ta = GENERATE(false, true), tb = GENERATE(false, true);
  const std::size_t M = 5, N = 7, K = 300;
  const Operand a = ta ? operand(K, M, g) : operand(M, K, g);
  const Operand b = tb ? operand(N, K, g) : operand(K, N, g);
  std::vector<float> c0(M * N);
  for (std::size_t i = 0; i < c0.size(); ++i) c0[i] = float(i % 7) - 3.f;
  const FlatView c = on_device(c0);
  const float alpha = 0.75f, beta = 0.5f;
  kernels::gemm_bf16(ta ? "T" : "N", tb ? "T" : "N", alpha, a.mat(), b.mat(), beta,
                     Mat(c.data(), M, N));
  const std::vector<float> got = to_host(c);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      double want = beta * double(c0[i * N + j]), scale = std::abs(want);
      for (std::size_t l = 0; l < K; ++l) {
        const double t = alpha * double(ta ? a.at(l, i) : a.at(i, l)) * double(tb ? b.at(j, l) : b.at(l, j));
        want += t;
        scale += std::abs(t);
      }
      // fp32 accumulation of K terms: within K * 2^-24 of the sum of magnitudes.
      REQUIRE(std::abs(double(got[i * N + j]) - want) <= double(K) * 0x1p-24 * scale);
    }
}

TEST_CASE("the model's bf16 linear and head GEMMs match fp32 GEMMs of the rounded operands",
          "[gemm][bf16]") {
  std::mt19937 g(5);
  const std::size_t BT = 12, C = 8, V = 40;
  MemoryTracker tracker;
  // Scratch for 3 rows of the head's logits at a time: the backward runs in 4 chunks.
  kernels::Bf16Gemms gemms(tracker, std::int64_t(3 * V));
  auto rounded = [&](std::size_t n) {
    std::normal_distribution<float> d(0.f, 1.f);
    std::vector<float> v(n);
    for (float& x : v) x = round_bf16(d(g));
    return v;
  };
  auto close = [](const std::vector<float>& x, const std::vector<float>& y) {
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      REQUIRE(std::abs(x[i] - y[i]) <= 1e-5f * (1.f + std::abs(y[i])));
  };

  // The head: logits = x wte^T; dx = dlogits wte; dwte += dlogits^T x.
  const Operand wte = operand(V, C, g);
  const std::vector<float> x = rounded(BT * C), dlogits = rounded(BT * V), dwte0 = rounded(V * C);
  const FlatView xd = on_device(x), dld = on_device(dlogits), wtef = on_device(wte.v);
  FlatView logits("logits", BT * V), dx("dx", BT * C);
  const FlatView dwte = on_device(dwte0);
  gemms.head_forward(Mat(logits.data(), BT, V), ConstMat(xd.data(), BT, C), wte.mat());
  gemms.head_backward(Mat(dx.data(), BT, C), Mat(dwte.data(), V, C), ConstMat(dld.data(), BT, V),
                      ConstMat(xd.data(), BT, C), wte.mat());
  FlatView logits_ref("logits_ref", BT * V), dx_ref("dx_ref", BT * C);
  const FlatView dwte_ref = on_device(dwte0);
  kernels::gemm("N", "T", 1.f, ConstMat(xd.data(), BT, C), ConstMat(wtef.data(), V, C), 0.f,
                Mat(logits_ref.data(), BT, V));
  kernels::gemm("N", "N", 1.f, ConstMat(dld.data(), BT, V), ConstMat(wtef.data(), V, C), 0.f,
                Mat(dx_ref.data(), BT, C));
  kernels::gemm("T", "N", 1.f, ConstMat(dld.data(), BT, V), ConstMat(xd.data(), BT, C), 1.f,
                Mat(dwte_ref.data(), V, C));
  close(to_host(logits), to_host(logits_ref));
  close(to_host(dx), to_host(dx_ref));
  close(to_host(dwte), to_host(dwte_ref));

  // A linear layer [C, 3C]: out = inp w + out; dinp = dout w^T; dw += inp^T dout.
  const Operand w = operand(C, 3 * C, g);
  const std::vector<float> dout = rounded(BT * 3 * C), out0 = rounded(BT * 3 * C);
  const FlatView wf = on_device(w.v), doutd = on_device(dout);
  const FlatView out = on_device(out0), out_ref = on_device(out0);
  FlatView dinp("dinp", BT * C), dinp_ref("dinp_ref", BT * C);
  const FlatView dw = on_device(rounded(C * 3 * C)), dw_ref = on_device(to_host(dw));
  MemoryTracker tracker2;
  kernels::Bf16Gemms linear(tracker2, std::int64_t(BT * 3 * C));
  linear.forward(Mat(out.data(), BT, 3 * C), ConstMat(xd.data(), BT, C), w.mat(), 1.f);
  linear.backward(Mat(dinp.data(), BT, C), Mat(dw.data(), C, 3 * C), ConstMat(doutd.data(), BT, 3 * C),
                 ConstMat(xd.data(), BT, C), w.mat());
  kernels::gemm("N", "N", 1.f, ConstMat(xd.data(), BT, C), ConstMat(wf.data(), C, 3 * C), 1.f,
                Mat(out_ref.data(), BT, 3 * C));
  kernels::gemm("N", "T", 1.f, ConstMat(doutd.data(), BT, 3 * C), ConstMat(wf.data(), C, 3 * C),
                0.f, Mat(dinp_ref.data(), BT, C));
  kernels::gemm("T", "N", 1.f, ConstMat(xd.data(), BT, C), ConstMat(doutd.data(), BT, 3 * C), 1.f,
                Mat(dw_ref.data(), C, 3 * C));
  close(to_host(out), to_host(out_ref));
  close(to_host(dinp), to_host(dinp_ref));
  close(to_host(dw), to_host(dw_ref));
  // The casts are tracked as activations: two scratch matrices of 3V bf16 values.
  REQUIRE(tracker.peak(MemCategory::Activations) == 2 * 4 * ((3 * std::int64_t(V) + 1) / 2));
}
