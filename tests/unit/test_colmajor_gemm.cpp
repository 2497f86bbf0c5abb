// SPDX-License-Identifier: MIT
// The GPU build hands cuBLAS the column-major call colmajor_call() computes. It is checked here
// against Fortran BLAS's sgemm (OpenBLAS), which takes exactly cuBLAS's arguments, and a plain
// double-precision row-major product: every transpose pair, windows of wider matrices, and a
// one-row window.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "model/gemm/colmajor_gemm.hpp"

extern "C" void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b,
                       const int* ldb, const float* beta, float* c, const int* ldc);

using fsdp::kernels::colmajor_call;
using fsdp::kernels::RowMajor;

namespace {

struct Matrix {
  std::size_t rows, cols, stride;
  std::vector<float> v;
  float at(std::size_t r, std::size_t c) const { return v[r * stride + c]; }
  RowMajor view() const { return {v.data(), rows, cols, stride}; }
};

Matrix random_matrix(std::size_t rows, std::size_t cols, std::size_t pad, std::mt19937& g) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Matrix m{rows, cols, cols + pad, std::vector<float>(rows * (cols + pad))};
  for (float& x : m.v) x = u(g);
  return m;
}

}  // namespace

TEST_CASE("the column-major call computes the row-major product", "[gemm]") {
  std::mt19937 g(7);
  const bool ta = GENERATE(false, true), tb = GENERATE(false, true);
  const std::size_t pad = GENERATE(0, 5);
  const std::size_t M = GENERATE(1, 7), N = 9, K = 4;
  const Matrix a = ta ? random_matrix(K, M, pad, g) : random_matrix(M, K, pad, g);
  const Matrix b = tb ? random_matrix(N, K, pad, g) : random_matrix(K, N, pad, g);
  Matrix c = random_matrix(M, N, pad, g);
  const Matrix c0 = c;
  const float alpha = 0.5f, beta = 2.f;

  const auto call = colmajor_call(ta, tb, a.view(), b.view(), c.view());
  const char opf = call.trans_first ? 'T' : 'N', ops = call.trans_second ? 'T' : 'N';
  sgemm_(&opf, &ops, &call.m, &call.n, &call.k, &alpha, static_cast<const float*>(call.first),
         &call.ld_first, static_cast<const float*>(call.second), &call.ld_second, &beta,
         static_cast<float*>(call.out), &call.ld_out);

  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      double want = beta * double(c0.at(i, j));
      for (std::size_t l = 0; l < K; ++l)
        want += alpha * double(ta ? a.at(l, i) : a.at(i, l)) * double(tb ? b.at(j, l) : b.at(l, j));
      REQUIRE(std::abs(double(c.at(i, j)) - want) < 1e-5);
    }
  // The padding between rows is never written.
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = N; j < c.stride; ++j) REQUIRE(c.v[i * c.stride + j] == c0.v[i * c.stride + j]);
}

TEST_CASE("a strided batch of column-major calls computes each row-major product", "[gemm]") {
  // Three problems side by side, as attention's heads lie in the qkv matrix: A_i and B_i are
  // column blocks of wider matrices, C_i squares one after the other.
  std::mt19937 g(3);
  const bool ta = GENERATE(false, true), tb = GENERATE(false, true);
  const std::size_t M = 4, N = 5, K = 3, count = 3;
  // Each operand's block shape, and a parent that holds all three blocks in a row.
  const std::size_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
  const Matrix a = random_matrix(ar, ac * count, 0, g), b = random_matrix(br, bc * count, 0, g);
  Matrix c = random_matrix(count * M, N, 0, g);
  const auto batch = fsdp::kernels::colmajor_batch(
      ta, tb, {a.v.data(), ar, ac, a.stride}, (long long)ac, {b.v.data(), br, bc, b.stride},
      (long long)bc, {c.v.data(), M, N, c.stride}, (long long)(M * N));
  // cublasSgemmStridedBatched's meaning, through Fortran sgemm one problem at a time.
  const auto& k = batch.call;
  const char opf = k.trans_first ? 'T' : 'N', ops = k.trans_second ? 'T' : 'N';
  const float one = 1.f, zero = 0.f;
  for (std::size_t i = 0; i < count; ++i)
    sgemm_(&opf, &ops, &k.m, &k.n, &k.k, &one,
           static_cast<const float*>(k.first) + i * batch.step_first, &k.ld_first,
           static_cast<const float*>(k.second) + i * batch.step_second, &k.ld_second, &zero,
           static_cast<float*>(k.out) + i * batch.step_out, &k.ld_out);
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t r = 0; r < M; ++r)
      for (std::size_t j = 0; j < N; ++j) {
        double want = 0.0;
        for (std::size_t l = 0; l < K; ++l)
          want += double(ta ? a.at(l, i * ac + r) : a.at(r, i * ac + l)) *
                  double(tb ? b.at(j, i * bc + l) : b.at(l, i * bc + j));
        REQUIRE(std::abs(double(c.at(i * M + r, j)) - want) < 1e-5);
      }
}

TEST_CASE("mismatched gemm shapes are refused with all three", "[gemm]") {
  std::vector<float> x(64);
  const RowMajor a{x.data(), 3, 4, 4}, b{x.data(), 5, 6, 6}, c{x.data(), 3, 6, 6};
  REQUIRE_THROWS_WITH(colmajor_call(false, false, a, b, c),
                      "gemm: op(A) is 3x4, op(B) 5x6, C 3x6");
}
