// SPDX-License-Identifier: MIT
// Muon's Newton-Schulz iteration (fsdp/optim/newton_schulz.hpp) against a float64 one written here,
// for wide, tall and square matrices: fp32 within 1e-4 relative (Frobenius) of it. bf16 is the
// bf16 algorithm (X, A and B rounded to bf16 before every product, as a float64 iteration here
// emulates): within a quarter of that algorithm's own distance from float64 of the emulation
// (what is left is fp32 accumulation and the few roundings it tips the other way: 6e-6 to 3e-3
// against 2e-2), and no further from float64 than 1.5x the algorithm. The bf16 algorithm is ~10x
// the spread that rounding the input alone makes: fifteen roundings, amplified by the iteration. A tall matrix's result is the
// transpose of its transpose's, and the output is near-orthogonal: its singular values lie in the
// quintic's band (X X^T's eigenvalues within [0.4, 1.4]).
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "core/bf16.hpp"
#include "fsdp/optim/newton_schulz.hpp"

using namespace fsdp;

namespace {

using M64 = std::vector<double>;

M64 matmul(const M64& a, const M64& b, int n, int k, int m, bool ta, bool tb) {
  // op(a) n x k, op(b) k x m
  M64 c(std::size_t(n * m), 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      double s = 0.0;
      for (int l = 0; l < k; ++l)
        s += (ta ? a[std::size_t(l * n + i)] : a[std::size_t(i * k + l)]) *
             (tb ? b[std::size_t(j * k + l)] : b[std::size_t(l * m + j)]);
      c[std::size_t(i * m + j)] = s;
    }
  return c;
}

// bf16: each product's operands rounded to bf16 first, as muon.ns_dtype = bf16 reads them.
M64 ns64(M64 x, int r, int c, bool bf16 = false) {
  const auto rd = [&](M64 v) {
    if (bf16)
      for (double& e : v) e = round_bf16(float(e));
    return v;
  };
  double n2 = 0.0;
  for (double v : x) n2 += v * v;
  for (double& v : x) v /= std::max(std::sqrt(n2), 1e-7);
  const bool tall = r > c;
  const int m = std::min(r, c), n = std::max(r, c);
  if (tall) {  // work on X^T
    M64 t(x.size());
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) t[std::size_t(j * r + i)] = x[std::size_t(i * c + j)];
    x = t;
  }
  for (int s = 0; s < 5; ++s) {
    const M64 a = matmul(rd(x), rd(x), m, n, m, false, true);
    M64 b = matmul(rd(a), rd(a), m, m, m, false, false);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = optim::kNsC * b[i] + optim::kNsB * a[i];
    const M64 bx = matmul(rd(b), rd(x), m, m, n, false, false);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = optim::kNsA * x[i] + bx[i];
  }
  if (tall) {
    M64 t(x.size());
    for (int i = 0; i < c; ++i)
      for (int j = 0; j < r; ++j) t[std::size_t(j * c + i)] = x[std::size_t(i * r + j)];
    x = t;
  }
  return x;
}

std::vector<float> run(const std::vector<float>& in, int r, int c, bool bf16) {
  FlatView x("x", in.size()), work("work", optim::newton_schulz_workspace(r, c, bf16));
  Kokkos::deep_copy(x, HostConstVec(in.data(), in.size()));
  optim::newton_schulz(Vec(x.data(), in.size()), r, c, 5, Vec(work.data(), work.size()), bf16);
  std::vector<float> out(in.size());
  Kokkos::deep_copy(HostVec(out.data(), out.size()), x);
  return out;
}

template <class A, class B>
double rel(const A& got, const B& want) {
  double d = 0.0, n = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    d += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    n += double(want[i]) * double(want[i]);
  }
  return std::sqrt(d / n);
}

}  // namespace

TEST_CASE("Newton-Schulz in fp32 and bf16 against float64", "[muon]") {
  std::mt19937 gen(7);
  std::normal_distribution<float> d(0.f, 1.f);
  for (const auto [r, c] : {std::pair{24, 40}, std::pair{40, 24}, std::pair{32, 32}}) {
    std::vector<float> x(std::size_t(r * c));
    for (float& v : x) v = d(gen);
    const M64 want = ns64(M64(x.begin(), x.end()), r, c);
    M64 rounded(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) rounded[i] = round_bf16(x[i]);
    const double spread = rel(ns64(rounded, r, c), want);
    const double e32 = rel(run(x, r, c, false), want), e16 = rel(run(x, r, c, true), want);
    const M64 emulated = ns64(M64(x.begin(), x.end()), r, c, true);
    const double same = rel(run(x, r, c, true), emulated), algo = rel(emulated, want);
    INFO(r << " x " << c << ": fp32 " << e32 << ", bf16 " << e16 << " (" << same
           << " from the same bf16 roundings in float64, which are " << algo
           << " from float64), input rounding alone " << spread);
    CHECK(e32 < 1e-4);
    CHECK(e16 < 1.5 * algo);
    CHECK(same < algo / 4);
    // Near-orthogonal on the short side: X X^T (or X^T X) has eigenvalues in the quintic's band,
    // so its diagonal does too.
    const std::vector<float> y = run(x, r, c, false);
    const int m = std::min(r, c);
    const M64 g = r <= c ? matmul(M64(y.begin(), y.end()), M64(y.begin(), y.end()), m, c, m, false, true)
                         : matmul(M64(y.begin(), y.end()), M64(y.begin(), y.end()), m, r, m, true, false);
    for (int i = 0; i < m; ++i) {
      CHECK(g[std::size_t(i * m + i)] > 0.4);
      CHECK(g[std::size_t(i * m + i)] < 1.4);
    }
  }
}
