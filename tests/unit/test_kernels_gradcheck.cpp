// SPDX-License-Identifier: MIT
// Every layer's backward against central finite differences of loss = sum(r * forward(x)),
// with r random: a wrong gradient (a flipped sign, a missing term) fails these.
#include <catch2/catch.hpp>

#include "gradcheck_util.hpp"
#include "model/attention.hpp"
#include "model/cross_entropy.hpp"
#include "model/embedding.hpp"
#include "model/gelu.hpp"
#include "model/layernorm.hpp"
#include "model/linear.hpp"
#include "model/residual.hpp"

using namespace fsdp;
using fsdp::test::grad_check;
using fsdp::test::random_view;
namespace k = fsdp::kernels;

using fsdp::test::CM;
using fsdp::test::CV;
using fsdp::test::M;
using fsdp::test::V;
using fsdp::test::require_ok;

TEST_CASE("layernorm backward matches finite differences", "[gradcheck]") {
  const int N = 6, C = 10;
  auto x = random_view("x", N * C, 1), w = random_view("w", C, 2), b = random_view("b", C, 3);
  auto r = random_view("r", N * C, 4);
  FlatView out("out", N * C), mean("mean", N), rstd("rstd", N);
  auto loss = [&] {
    k::layernorm_forward(M(out, N, C), V(mean), V(rstd), CM(x, N, C), CV(w), CV(b));
    return fsdp::test::dot(out, r);
  };
  loss();
  FlatView dx("dx", N * C), dw("dw", C), db("db", C);
  k::layernorm_backward(M(dx, N, C), V(dw), V(db), CM(r, N, C), CM(x, N, C), CV(w), CV(mean),
                        CV(rstd));
  require_ok(grad_check("x", x.data(), dx.data(), N * C, loss, 1e-2f));
  require_ok(grad_check("w", w.data(), dw.data(), C, loss));
  require_ok(grad_check("b", b.data(), db.data(), C, loss));
}

TEST_CASE("linear backward matches finite differences", "[gradcheck]") {
  const int N = 5, IC = 7, OC = 9;
  auto x = random_view("x", N * IC, 1), w = random_view("w", IC * OC, 2),
       b = random_view("b", OC, 3), r = random_view("r", N * OC, 4);
  FlatView out("out", N * OC);
  auto loss = [&] {
    k::linear_forward(M(out, N, OC), CM(x, N, IC), CM(w, IC, OC), CV(b));
    return fsdp::test::dot(out, r);
  };
  FlatView dx("dx", N * IC), dw("dw", IC * OC), db("db", OC);
  k::linear_backward(M(dx, N, IC), M(dw, IC, OC), V(db), CM(r, N, OC), CM(x, N, IC),
                     CM(w, IC, OC));
  require_ok(grad_check("x", x.data(), dx.data(), N * IC, loss));
  require_ok(grad_check("w", w.data(), dw.data(), IC * OC, loss));
  require_ok(grad_check("b", b.data(), db.data(), OC, loss));
  SECTION("parameter gradients accumulate") {
    FlatView dx2("dx2", N * IC);
    k::linear_backward(M(dx2, N, IC), M(dw, IC, OC), V(db), CM(r, N, OC), CM(x, N, IC),
                       CM(w, IC, OC));
    FlatView dw1("dw1", IC * OC), db1("db1", OC);
    k::linear_backward(M(dx2, N, IC), M(dw1, IC, OC), V(db1), CM(r, N, OC), CM(x, N, IC),
                       CM(w, IC, OC));
    for (int i = 0; i < IC * OC; ++i) REQUIRE(dw(i) == Approx(2 * dw1(i)).margin(1e-5));
    for (int i = 0; i < N * IC; ++i) REQUIRE(dx2(i) == Approx(dx(i)).margin(1e-6));
  }
}

TEST_CASE("gelu backward matches finite differences", "[gradcheck]") {
  const int n = 40;
  auto x = random_view("x", n, 1, 2.f), r = random_view("r", n, 2);
  FlatView out("out", n), dx("dx", n);
  auto loss = [&] {
    k::gelu_forward(V(out), CV(x));
    return fsdp::test::dot(out, r);
  };
  k::gelu_backward(V(dx), CV(x), CV(r));
  require_ok(grad_check("x", x.data(), dx.data(), n, loss, 1e-3f));
}

TEST_CASE("residual backward adds the gradient to both inputs", "[gradcheck]") {
  const int n = 12;
  auto a = random_view("a", n, 1), b = random_view("b", n, 2), r = random_view("r", n, 3);
  FlatView out("out", n), da("da", n);
  auto loss = [&] {
    k::residual_forward(V(out), CV(a), CV(b));
    return fsdp::test::dot(out, r);
  };
  k::residual_backward(V(da), CV(r));
  require_ok(grad_check("a", a.data(), da.data(), n, loss));
  require_ok(grad_check("b", b.data(), da.data(), n, loss));
}

TEST_CASE("attention backward matches finite differences", "[gradcheck]") {
  const int B = 2, T = 5, H = 2, C = 8;
  auto qkv = random_view("qkv", B * T * 3 * C, 1), r = random_view("r", B * T * C, 2);
  FlatView out("out", B * T * C), att("att", B * H * T * T), scratch("s", B * H * T);
  FlatView dqkv("dqkv", B * T * 3 * C);
  auto loss = [&] {
    k::attention_forward(M(out, B * T, C), Att3(att.data(), B * H, T, T),
                         CM(qkv, B * T, 3 * C), B, T, H);
    return fsdp::test::dot(out, r);
  };
  loss();
  k::attention_backward(M(dqkv, B * T, 3 * C), M(scratch, B * H, T), CM(r, B * T, C),
                        ConstAtt3(att.data(), B * H, T, T), CM(qkv, B * T, 3 * C), B, T, H);
  require_ok(grad_check("qkv", qkv.data(), dqkv.data(), B * T * 3 * C, loss, 1e-2f, 2e-2, 2e-4,
                        240));
  SECTION("causal: the first position's output ignores later keys") {
    const float before = (loss(), out(0));
    qkv(1 * 3 * C + C) += 5.f;  // key of position 1, head 0
    REQUIRE(float((loss(), out(0))) == before);
  }
}

TEST_CASE("embedding backward matches finite differences", "[gradcheck]") {
  const int B = 2, T = 4, C = 6, Vv = 7;
  auto wte = random_view("wte", Vv * C, 1), wpe = random_view("wpe", T * C, 2),
       r = random_view("r", B * T * C, 3);
  TokenView tok("tok", B * T);
  const int ids[] = {3, 1, 3, 6, 0, 3, 2, 1};
  for (int i = 0; i < B * T; ++i) tok(i) = ids[i];
  FlatView x("x", B * T * C), dwte("dwte", Vv * C), dwpe("dwpe", T * C);
  auto loss = [&] {
    k::embedding_forward(M(x, B * T, C), tok, CM(wte, Vv, C), CM(wpe, T, C), T);
    return fsdp::test::dot(x, r);
  };
  k::embedding_backward(M(dwte, Vv, C), M(dwpe, T, C), CM(r, B * T, C), tok, T);
  require_ok(grad_check("wte", wte.data(), dwte.data(), Vv * C, loss, 1e-2f, 2e-2, 2e-4, 42));
  require_ok(grad_check("wpe", wpe.data(), dwpe.data(), T * C, loss));
}

TEST_CASE("cross-entropy backward matches finite differences", "[gradcheck]") {
  const int N = 4, Vv = 9;
  auto logits = random_view("logits", N * Vv, 1);
  TokenView tgt("tgt", N);
  for (int i = 0; i < N; ++i) tgt(i) = (i * 5) % Vv;
  FlatView losses("losses", N), z("z", N * Vv);
  auto loss = [&] {
    k::cross_entropy_forward(V(losses), CM(logits, N, Vv), tgt);
    double s = 0;
    for (int i = 0; i < N; ++i) s += losses(i);
    return s / N;
  };
  const double l0 = loss();
  REQUIRE(l0 > 0.0);
  Kokkos::deep_copy(z, logits);
  k::cross_entropy_backward(M(z, N, Vv), tgt, 1.f / N);
  require_ok(grad_check("logits", logits.data(), z.data(), N * Vv, loss, 1e-2f, 2e-2, 2e-4, 36));
}
