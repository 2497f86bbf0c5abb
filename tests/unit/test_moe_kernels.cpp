// SPDX-License-Identifier: MIT
// The mixture-of-experts router and dispatch (model/experts/): the router's probabilities, top-k (the
// lower expert on a tie, as a brute-force sort here has it) and renormalised weights; its
// backward, with Hugging Face's balance loss, against central finite differences of
// sum c w + coef * E * sum_e f_e P_e; the dispatch plan's rows grouped by expert in token order;
// gather and combine against direct sums, and their backwards against finite differences.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "gradcheck_util.hpp"
#include "model/experts/dispatch.hpp"
#include "model/experts/experts.hpp"
#include "model/experts/router.hpp"

using namespace fsdp;
using namespace fsdp::test;

namespace {

using IdView = Kokkos::View<std::int32_t**, Kokkos::LayoutRight, DeviceSpace>;

struct Routed {
  FlatView probs, weights;
  IdView top;
};

Routed route(const FlatView& logits, int N, int E, int K, bool renorm) {
  Routed r{FlatView("p", N * E), FlatView("w", N * K), IdView("top", N, K)};
  kernels::router_forward(CM(logits, N, E), M(r.probs, N, E),
                          kernels::ExpertIds(r.top.data(), N, K), M(r.weights, N, K), renorm);
  return r;
}

}  // namespace

TEST_CASE("MoE router: softmax, top-k with ties to the lower expert, renormalised weights",
          "[moe]") {
  const int N = 6, E = 8, K = 3;
  FlatView logits = random_view("logits", N * E, 3);
  logits(0 * E + 2) = logits(0 * E + 5) = 4.f;  // a tie at the top of token 0
  for (const bool renorm : {false, true}) {
    const Routed r = route(logits, N, E, K, renorm);
    for (int i = 0; i < N; ++i) {
      double s = 0.0;
      for (int e = 0; e < E; ++e) s += r.probs(i * E + e);
      CHECK(s == Approx(1.0).epsilon(1e-6));
      std::vector<int> order(E);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return r.probs(i * E + a) > r.probs(i * E + b);
      });
      double sel = 0.0;
      for (int j = 0; j < K; ++j) sel += r.probs(i * E + order[std::size_t(j)]);
      for (int j = 0; j < K; ++j) {
        CHECK(r.top(i, j) == order[std::size_t(j)]);
        const double p = r.probs(i * E + order[std::size_t(j)]);
        CHECK(r.weights(i * K + j) == Approx(renorm ? p / sel : p).epsilon(1e-6));
      }
    }
    CHECK(r.top(0, 0) == 2);
    CHECK(r.top(0, 1) == 5);
  }
}

TEST_CASE("MoE router backward with the balance loss against finite differences", "[moe]") {
  const int N = 7, E = 6, K = 2;
  const double coef = 0.3;
  FlatView logits = random_view("logits", N * E, 11, 2.f), c = random_view("c", N * K, 12);
  for (const bool renorm : {false, true}) {
    const Routed r0 = route(logits, N, E, K, renorm);
    // f_e: the share of choices of e, fixed (a count); its gradient flows through P alone.
    std::vector<std::int64_t> counts(E, 0);
    std::vector<double> psum(E, 0.0);
    kernels::router_balance_sums(CM(r0.probs, N, E), kernels::ConstExpertIds(r0.top.data(), N, K),
                                 counts.data(), psum.data());
    FlatView aux_dp("aux_dp", E);
    for (int e = 0; e < E; ++e) aux_dp(e) = float(coef * E * double(counts[std::size_t(e)]) / (double(N) * N));
    const auto loss = [&] {
      const Routed r = route(logits, N, E, K, renorm);
      double l = 0.0;
      for (int i = 0; i < N * K; ++i) l += double(c(i)) * r.weights(i);
      for (int e = 0; e < E; ++e) {
        double P = 0.0;
        for (int i = 0; i < N; ++i) P += r.probs(i * E + e);
        l += coef * E * (double(counts[std::size_t(e)]) / N) * (P / N);
      }
      return l;
    };
    FlatView dlogits("dlogits", N * E);
    kernels::router_backward(M(dlogits, N, E), CM(r0.probs, N, E),
                             kernels::ConstExpertIds(r0.top.data(), N, K), CM(r0.weights, N, K),
                             CM(c, N, K), CV(aux_dp), renorm);
    const GradCheckResult g =
        grad_check("dlogits", logits.data(), dlogits.data(), N * E, loss, 1e-3f, 2e-2, 2e-4, 42);
    INFO(g.first_failure << " (renorm " << renorm << ", worst " << g.worst_rel << ")");
    CHECK(g.failed == 0);
  }
}

TEST_CASE("MoE dispatch: rows by expert in token order, gather and combine and their backwards",
          "[moe]") {
  const int N = 9, E = 4, K = 2, C = 5;
  std::vector<std::int32_t> top(std::size_t(N * K));
  for (int t = 0; t < N; ++t) {
    top[std::size_t(t * K)] = (t * 3) % E;
    top[std::size_t(t * K + 1)] = (t * 3 + 1 + t % 2) % E;
  }
  const kernels::DispatchPlan p = kernels::dispatch_plan(top.data(), N, K, E);
  CHECK(p.offsets.back() == N * K);
  for (int e = 0; e < E; ++e)
    for (std::int64_t r = p.offsets[std::size_t(e)]; r < p.offsets[std::size_t(e) + 1]; ++r) {
      CHECK(top[std::size_t(p.choice[std::size_t(r)])] == e);
      if (r > p.offsets[std::size_t(e)]) CHECK(p.choice[std::size_t(r)] > p.choice[std::size_t(r - 1)]);
      CHECK(p.row_of[std::size_t(p.choice[std::size_t(r)])] == r);
    }
  const kernels::Rows choice(p.choice.data(), p.choice.size()), row_of(p.row_of.data(), p.row_of.size());
  FlatView x = random_view("x", N * C, 21), xe("xe", N * K * C);
  kernels::moe_gather(M(xe, N * K, C), CM(x, N, C), choice, K);
  for (int r = 0; r < N * K; ++r)
    for (int c = 0; c < C; ++c) CHECK(xe(r * C + c) == x((p.choice[std::size_t(r)] / K) * C + c));
  // combine: y = sum_j w ye; loss = sum a . y: finite differences in ye and w (it is linear in each).
  FlatView ye = random_view("ye", N * K * C, 22), w = random_view("w", N * K, 23),
           a = random_view("a", N * C, 24), y("y", N * C);
  const auto loss = [&] {
    kernels::moe_combine(M(y, N, C), CM(ye, N * K, C), CM(w, N, K), row_of);
    return dot(a, y);
  };
  FlatView dye("dye", N * K * C), dw("dw", N * K), dx("dx", N * C);
  kernels::moe_combine_backward(M(dye, N * K, C), M(dw, N, K), CM(a, N, C), CM(ye, N * K, C),
                                CM(w, N, K), row_of);
  CHECK(grad_check("dye", ye.data(), dye.data(), N * K * C, loss).failed == 0);
  CHECK(grad_check("dw", w.data(), dw.data(), N * K, loss).failed == 0);
  // gather's backward: loss = sum b . xe, so dx[t] = sum_j b[row_of(t, j)].
  FlatView b = random_view("b", N * K * C, 25);
  kernels::moe_gather_backward(M(dx, N, C), CM(b, N * K, C), row_of, K);
  const auto gloss = [&] {
    kernels::moe_gather(M(xe, N * K, C), CM(x, N, C), choice, K);
    return dot(b, xe);
  };
  CHECK(grad_check("dx", x.data(), dx.data(), N * C, gloss).failed == 0);
}

TEST_CASE("MoE experts: grouped SwiGLU MLPs against finite differences, idle experts skipped",
          "[moe]") {
  const int E = 3, C = 4, F = 5;
  const std::vector<std::int64_t> offsets{0, 3, 3, 7};  // expert 1 has no rows
  const int R = 7;
  FlatView xe = random_view("xe", R * C, 31), wgu = random_view("wgu", E * 2 * F * C, 32, 0.5f),
           wdown = random_view("wdown", E * C * F, 33, 0.5f), a = random_view("a", R * C, 34);
  FlatView ye("ye", R * C), gu("gu", R * 2 * F), h("h", R * F);
  kernels::ExpertTensors w, g;
  FlatView dgu_w("dgu_w", E * 2 * F * C), ddown_w("ddown_w", E * C * F);
  for (int e = 0; e < E; ++e) {
    w.gu.push_back(wgu.data() + e * 2 * F * C);
    w.down.push_back(wdown.data() + e * C * F);
    g.gu.push_back(dgu_w.data() + e * 2 * F * C);
    g.down.push_back(ddown_w.data() + e * C * F);
  }
  const kernels::ExpertLinear lin = kernels::ExpertLinear::of(w, g, C, F);
  const auto loss = [&] {
    kernels::experts_forward(M(ye, R, C), M(gu, R, 2 * F), M(h, R, F), CM(xe, R, C), offsets, lin);
    return dot(a, ye);
  };
  loss();
  FlatView dxe("dxe", R * C), dgu("dgu", R * 2 * F), dh("dh", R * F);
  kernels::experts_backward(M(dxe, R, C), M(dgu, R, 2 * F), M(dh, R, F), CM(a, R, C), CM(xe, R, C),
                            CM(gu, R, 2 * F), CM(h, R, F), offsets, lin);
  CHECK(grad_check("dxe", xe.data(), dxe.data(), R * C, loss, 1e-2f, 2e-2, 2e-4, 40).failed == 0);
  CHECK(grad_check("d gate_up", wgu.data(), dgu_w.data(), E * 2 * F * C, loss, 1e-2f, 2e-2, 2e-4, 60).failed == 0);
  CHECK(grad_check("d down", wdown.data(), ddown_w.data(), E * C * F, loss, 1e-2f, 2e-2, 2e-4, 60).failed == 0);
  for (int i = 0; i < 2 * F * C; ++i) CHECK(dgu_w(1 * 2 * F * C + i) == 0.f);  // expert 1: no rows
}

TEST_CASE("MoE capacity: each expert keeps its first choices in token order, the rest dropped",
          "[moe]") {
  const int N = 9, E = 4, K = 2, C = 3;
  std::vector<std::int32_t> top(std::size_t(N * K));
  for (int t = 0; t < N; ++t) {  // expert 0 is everyone's first choice
    top[std::size_t(t * K)] = 0;
    top[std::size_t(t * K + 1)] = 1 + t % 3;
  }
  const kernels::DispatchPlan p = kernels::dispatch_plan(top.data(), N, K, E, /*capacity=*/4);
  CHECK(p.counts == std::vector<std::int64_t>{4, 3, 3, 3});
  CHECK(p.dropped == 5);  // tokens 4..8's first choices
  CHECK(p.rows() == N * K - 5);
  for (int t = 0; t < N; ++t) CHECK((p.row_of[std::size_t(t * K)] < 0) == (t >= 4));
  // A dropped choice adds nothing and its weight's gradient is 0; the kept ones as before.
  const kernels::Rows row_of(p.row_of.data(), p.row_of.size());
  const int R = int(p.rows());
  FlatView ye = random_view("ye", R * C, 41), w = random_view("w", N * K, 42),
           a = random_view("a", N * C, 43), y("y", N * C), dye("dye", R * C), dw("dw", N * K);
  const auto loss = [&] {
    kernels::moe_combine(M(y, N, C), CM(ye, R, C), CM(w, N, K), row_of);
    return dot(a, y);
  };
  kernels::moe_combine_backward(M(dye, R, C), M(dw, N, K), CM(a, N, C), CM(ye, R, C), CM(w, N, K), row_of);
  CHECK(grad_check("dye", ye.data(), dye.data(), R * C, loss).failed == 0);
  CHECK(grad_check("dw", w.data(), dw.data(), N * K, loss).failed == 0);
  for (int t = 4; t < N; ++t) CHECK(dw(t * K) == 0.f);
}

TEST_CASE("MoE router bias chooses the experts, the probabilities weigh them", "[moe]") {
  const int N = 1, E = 3, K = 1;
  FlatView logits("logits", N * E), probs("probs", N * E), w("w", N * K), bias("bias", E);
  logits(0) = 2.f;  // expert 0 is the most probable
  logits(1) = 1.f;
  logits(2) = 0.f;
  bias(2) = 1.f;  // expert 2's bias lifts it past expert 0
  std::vector<std::int32_t> top(std::size_t(N * K));
  kernels::router_forward(CM(logits, N, E), M(probs, N, E), kernels::ExpertIds(top.data(), N, K),
                          M(w, N, K), /*renorm=*/false, CV(bias));
  CHECK(top[0] == 2);
  CHECK(w(0) == probs(2));
}
