// SPDX-License-Identifier: MIT
// oneDNN's matmul behind the CPU bf16 GEMMs (model/gemm/onednn_matmul.hpp), against a float64 product
// of the same values: every transpose pair, windows of wider matrices (row strides), alpha, beta
// = 0 over a C full of NaN (overwritten, never read) and beta != 0 (accumulated), over a K long
// enough that a swapped stride or a dropped accumulation is far outside the fp32 rounding bound.
// The fp32 inputs run the same descriptors and post-ops as bf16 on every CPU; bf16 inputs run
// where oneDNN has a bf16 kernel for the CPU, and a CPU with AVX-512 must have one. Every case
// runs again as a ragged call (the experts': A's row count given at run time), which must make
// one primitive for all row counts.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/bf16.hpp"
#include "model/gemm/onednn_matmul.hpp"

using namespace fsdp;
using kernels::GemmRows;
using kernels::onednn::Inputs;

namespace {

// A stored rows x cols matrix with row stride ld >= cols: the values (exactly bf16, so both
// input types hold the same numbers) and their storage in either type.
struct Stored {
  std::int64_t rows, cols, ld;
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
  double at(std::int64_t r, std::int64_t c) const { return f32[r * ld + c]; }
  const void* data(Inputs in) const {
    return in == Inputs::BF16 ? static_cast<const void*>(bf16.data()) : f32.data();
  }
};

Stored stored(std::int64_t rows, std::int64_t cols, std::int64_t pad, std::mt19937& g) {
  std::normal_distribution<float> d(0.f, 1.f);
  Stored s{rows, cols, cols + pad, {}, {}};
  s.f32.resize(rows * s.ld);
  s.bf16.resize(rows * s.ld);
  for (std::size_t i = 0; i < s.f32.size(); ++i) {
    s.bf16[i] = to_bf16(d(g));
    s.f32[i] = from_bf16(s.bf16[i]);
  }
  return s;
}

void check_matmul(Inputs in, bool ta, bool tb, std::int64_t pad, float alpha, float beta,
                  GemmRows rows = GemmRows::Fixed) {
  std::mt19937 g(7);
  const std::int64_t M = 6, N = 9, K = 300, ldc = N + pad;
  const Stored a = ta ? stored(K, M, pad, g) : stored(M, K, pad, g);
  const Stored b = tb ? stored(N, K, pad, g) : stored(K, N, pad, g);
  std::vector<float> c0(M * ldc), c(M * ldc);
  for (std::size_t i = 0; i < c0.size(); ++i) c0[i] = float(i % 7) - 3.f;
  c = c0;
  if (beta == 0.f)
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) c[i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
  const std::string& impl = kernels::onednn::matmul(in, ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K,
                                                    alpha, a.data(in), a.ld, b.data(in), b.ld,
                                                    beta, c.data(), ldc, rows);
  INFO("oneDNN kernel " << impl << (rows == GemmRows::Ragged ? " (ragged rows)" : "") << ", op "
                        << (ta ? 'T' : 'N') << (tb ? 'T' : 'N') << ", pad "
                        << pad << ", alpha " << alpha << ", beta " << beta);
  for (std::int64_t i = 0; i < M; ++i) {
    for (std::int64_t j = 0; j < N; ++j) {
      double want = beta == 0.f ? 0.0 : beta * double(c0[i * ldc + j]), scale = std::abs(want);
      for (std::int64_t l = 0; l < K; ++l) {
        const double t = alpha * (ta ? a.at(l, i) : a.at(i, l)) * (tb ? b.at(j, l) : b.at(l, j));
        want += t;
        scale += std::abs(t);
      }
      // fp32 accumulation of K terms: within K * 2^-24 of the sum of magnitudes.
      REQUIRE(std::abs(double(c[i * ldc + j]) - want) <= double(K) * 0x1p-24 * scale);
    }
    for (std::int64_t j = N; j < ldc; ++j)  // the window's neighbours are not written
      REQUIRE(c[i * ldc + j] == c0[i * ldc + j]);
  }
}

}  // namespace

TEST_CASE("oneDNN's matmul maps row-major op(A) op(B) onto its strides", "[gemm][onednn]") {
  if (!kernels::onednn::built()) {
    WARN("this build has no oneDNN: nothing to test");
    return;
  }
  const bool ta = GENERATE(false, true), tb = GENERATE(false, true);
  const std::int64_t pad = GENERATE(0, 3);
  const float beta = GENERATE(0.f, 1.f, 0.5f);
  // Ragged: A's stored rows (M here for op 'N', K for 'T') given at run time, the experts' call.
  const GemmRows rows = GENERATE(GemmRows::Fixed, GemmRows::Ragged);
  check_matmul(Inputs::F32, ta, tb, pad, 0.75f, beta, rows);
  check_matmul(Inputs::F32, ta, tb, pad, 1.f, beta, rows);
  if (kernels::onednn::support(Inputs::BF16).fast) {
    check_matmul(Inputs::BF16, ta, tb, pad, 0.75f, beta, rows);
    check_matmul(Inputs::BF16, ta, tb, pad, 1.f, beta, rows);
  }
}

TEST_CASE("a ragged call makes one primitive for every row count", "[gemm][onednn]") {
  if (!kernels::onednn::built()) return;
  const Inputs in = GENERATE(Inputs::F32, Inputs::BF16);
  if (!kernels::onednn::support(in).fast) return;
  const auto& ragged = kernels::onednn::ragged_support(in);
  INFO("oneDNN's ragged kernel: " << ragged.impl);
  // The experts' kernel must compute, not fall to reference loops, where the fixed one does:
  // otherwise every new row count costs a primitive (matmul falls back to that, correctly).
  REQUIRE(ragged.fast);
  const std::int64_t N = 16, K = 32, maxM = 40;
  // Room for the largest call of either op: A is [M, K] or [rows, maxM], B is [K or rows, N].
  std::vector<float> a(maxM * std::max(K, maxM), 1.f), b(maxM * N, 0.5f), c(maxM * N);
  std::vector<std::uint16_t> a16(a.size(), to_bf16(1.f)), b16(b.size(), to_bf16(0.5f));
  const void* pa = in == Inputs::BF16 ? static_cast<const void*>(a16.data()) : a.data();
  const void* pb = in == Inputs::BF16 ? static_cast<const void*>(b16.data()) : b.data();
  // op 'N': M is A's rows; op 'T': K is, so a dW-like call (dy^T x) sums over the row count.
  for (const char ta : {'N', 'T'}) {
    std::int64_t made = -1;
    for (std::int64_t rows : {1, 7, 40, 13}) {
      const std::int64_t M = ta == 'N' ? rows : maxM, Kc = ta == 'N' ? K : rows;
      std::fill(c.begin(), c.end(), -1.f);
      kernels::onednn::matmul(in, ta, 'N', M, N, Kc, 1.f, pa, ta == 'N' ? K : maxM, pb, N, 0.f,
                              c.data(), N, GemmRows::Ragged);
      if (made < 0) made = kernels::onednn::primitives_created();
      INFO("op " << ta << "N, " << rows << " rows");
      REQUIRE(kernels::onednn::primitives_created() == made);
      for (std::int64_t i = 0; i < M * N; ++i) REQUIRE(c[std::size_t(i)] == 0.5f * float(Kc));
      for (std::int64_t i = M * N; i < maxM * N; ++i) REQUIRE(c[std::size_t(i)] == -1.f);
    }
  }
}

TEST_CASE("oneDNN primitives are made once per shape and reused", "[gemm][onednn]") {
  if (!kernels::onednn::built()) return;
  std::vector<float> a(64 * 32, 1.f), b(32 * 16, 0.5f), c(64 * 16, 0.f);
  auto run = [&](float beta) {
    kernels::onednn::matmul(Inputs::F32, 'N', 'N', 64, 16, 32, 1.f, a.data(), 32, b.data(), 16,
                            beta, c.data(), 16);
  };
  run(0.f);
  const std::int64_t made = kernels::onednn::primitives_created();
  for (int i = 0; i < 5; ++i) run(0.f);
  REQUIRE(kernels::onednn::primitives_created() == made);
  for (float v : c) REQUIRE(v == 16.f);
  run(1.f);  // another beta is another primitive, which accumulates
  REQUIRE(kernels::onednn::primitives_created() == made + 1);
  for (float v : c) REQUIRE(v == 32.f);
}

TEST_CASE("oneDNN reports a bf16 kernel exactly where the CPU has one", "[gemm][onednn]") {
  const auto& bf16 = kernels::onednn::support(Inputs::BF16);
  INFO("oneDNN bf16 matmul: " << bf16.impl);
  REQUIRE(!bf16.impl.empty());
  if (!kernels::onednn::built()) {
    REQUIRE_FALSE(bf16.fast);
    return;
  }
  REQUIRE(kernels::onednn::support(Inputs::F32).fast);
#if defined(__x86_64__) && defined(__GNUC__)
  // oneDNN's bf16 kernels need AVX-512 (they emulate bf16 there) or AVX512-BF16 / AMX.
  if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    REQUIRE(bf16.fast);
  if (!__builtin_cpu_supports("avx512f") && !__builtin_cpu_supports("avxvnni"))
    REQUIRE_FALSE(bf16.fast);
#endif
}
