// SPDX-License-Identifier: MIT
// The GPU build's attention (attention_batched.hpp: every head in one strided-batched GEMM, the
// full score square masked in one softmax kernel) against the CPU build's causal blocks, run
// here on the CPU: the output, the stored probabilities and every input gradient agree to fp32
// rounding, over sequences that span several causal blocks, with and without packed documents.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "model/attention.hpp"

using namespace fsdp;

namespace {

FlatView random_view(std::size_t n, std::mt19937& g) {
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> h(n);
  for (float& x : h) x = d(g);
  FlatView v("random", n);
  Kokkos::deep_copy(v, HostConstVec(h.data(), n));
  return v;
}

std::vector<float> host(const FlatView& v) {
  std::vector<float> h(v.extent(0));
  Kokkos::deep_copy(HostVec(h.data(), h.size()), v);
  return h;
}

void close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(what << " element " << i);
    REQUIRE(std::abs(got[i] - want[i]) <= 2e-5f * (1.f + std::abs(want[i])));
  }
}

}  // namespace

TEST_CASE("batched attention matches the causal blocks", "[attention]") {
  const int T = GENERATE(9, 70), B = 2, H = 3, C = 12;
  const bool documents = GENERATE(false, true);  // packed documents: rows see their own only
  std::mt19937 g(static_cast<std::uint32_t>(T));
  Kokkos::View<int*, DeviceSpace> starts("starts", std::size_t(B) * T);
  std::vector<int> st(std::size_t(B) * T, 0);
  if (documents) {
    auto h = Kokkos::create_mirror_view(starts);
    for (int b = 0; b < B; ++b)
      for (int t = 0, s = 0; t < T; ++t) {
        if (t > 0 && (t * (b + 2)) % 7 == 0) s = t;
        h(std::size_t(b) * T + t) = st[std::size_t(b) * T + t] = s;
      }
    Kokkos::deep_copy(starts, h);
  }
  const int* sp = documents ? starts.data() : nullptr;
  const std::size_t BT = std::size_t(B) * T, att_n = std::size_t(B) * H * T * T;
  const FlatView qkv = random_view(BT * 3 * C, g), dout = random_view(BT * C, g);
  FlatView out_a("out_a", BT * C), out_b("out_b", BT * C);
  FlatView att_a("att_a", att_n), att_b("att_b", att_n);
  const ConstMat q(qkv.data(), BT, 3 * C);
  kernels::attention_forward_blocked(Mat(out_a.data(), BT, C), Att3(att_a.data(), B * H, T, T), q, B, T, H, H, sp);
  kernels::attention_forward_batched(Mat(out_b.data(), BT, C), Att3(att_b.data(), B * H, T, T), q, B, T, H, sp);
  close(host(out_b), host(out_a), "output");
  // The blocked kernel leaves what lies past a row's causal block as it was; compare keys 0..t.
  const std::vector<float> pa = host(att_a), pb = host(att_b);
  for (std::size_t r = 0; r < std::size_t(B) * H * T; ++r) {
    const std::size_t t = r % std::size_t(T), lo = std::size_t(st[(r / (H * T)) * T + t]);
    for (std::size_t j = 0; j < std::size_t(T); ++j) {
      const float want = j <= t && j >= lo ? pa[r * T + j] : 0.f;
      REQUIRE(std::abs(pb[r * T + j] - want) <= 1e-6f);
    }
  }
  FlatView dq_a("dq_a", BT * 3 * C), dq_b("dq_b", BT * 3 * C);
  FlatView work_a("work_a", std::size_t(T) * T), work_b("work_b", std::size_t(H) * T * T);
  kernels::attention_backward_blocked(Mat(dq_a.data(), BT, 3 * C), ConstMat(dout.data(), BT, C),
                                      ConstAtt3(att_a.data(), B * H, T, T), q, B, T, H, H,
                                      Vec(work_a.data(), work_a.extent(0)), sp);
  kernels::attention_backward_batched(Mat(dq_b.data(), BT, 3 * C), ConstMat(dout.data(), BT, C),
                                      ConstAtt3(att_b.data(), B * H, T, T), q, B, T, H,
                                      Vec(work_b.data(), work_b.extent(0)), sp);
  close(host(dq_b), host(dq_a), "dqkv");
}
