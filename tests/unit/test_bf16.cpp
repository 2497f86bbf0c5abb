// SPDX-License-Identifier: MIT
// The bf16 cast against an independent reference: the two bf16 neighbours of x are its
// truncation and the next value up; the cast must pick the nearer, the even one on a tie.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/bf16.hpp"

using namespace fsdp;

namespace {

float bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint32_t ubits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Nearest by exact double arithmetic, ties to the even significand.
std::uint16_t reference(float x) {
  const std::uint16_t lo = std::uint16_t(ubits(x) >> 16), hi = std::uint16_t(lo + 1);
  const double dx = x, dlo = from_bf16(lo), dhi = from_bf16(hi);
  const double elo = std::abs(dx - dlo), ehi = std::abs(dhi - dx);
  if (elo < ehi) return lo;
  if (ehi < elo) return hi;
  return (lo & 1u) ? hi : lo;
}

}  // namespace

TEST_CASE("bf16 rounds to nearest, ties to even", "[bf16]") {
  std::mt19937 gen(7);
  std::uniform_int_distribution<std::uint32_t> any;
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = bits(any(gen));
    if (!std::isfinite(x) || std::abs(x) > 3.38e38f) continue;  // just below bf16's largest
    REQUIRE(to_bf16(x) == reference(x));
    ++checked;
  }
  REQUIRE(checked > 150000);
  // Exact ties: the halfway point between two bf16 values goes to the even one.
  CHECK(to_bf16(bits(0x3f808000u)) == 0x3f80);  // 1 + 2^-8: between 0x3f80 (even) and 0x3f81
  CHECK(to_bf16(bits(0x3f818000u)) == 0x3f82);  // between 0x3f81 and 0x3f82 (even)
  CHECK(to_bf16(bits(0x3f808001u)) == 0x3f81);  // just above the tie
  CHECK(from_bf16(to_bf16(1.0f)) == 1.0f);
  CHECK(from_bf16(to_bf16(-2.5f)) == -2.5f);
}

TEST_CASE("bf16 keeps NaN, infinities, zeros and overflows to infinity", "[bf16]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(std::isnan(from_bf16(to_bf16(std::nanf("")))));
  CHECK(std::isnan(from_bf16(to_bf16(bits(0x7f800001u)))));  // a NaN whose top half is inf
  CHECK(from_bf16(to_bf16(inf)) == inf);
  CHECK(from_bf16(to_bf16(-inf)) == -inf);
  CHECK(from_bf16(to_bf16(std::numeric_limits<float>::max())) == inf);
  CHECK(to_bf16(-0.0f) == 0x8000);
  CHECK(to_bf16(0.0f) == 0x0000);
  const float tiny = std::numeric_limits<float>::denorm_min();
  CHECK(from_bf16(to_bf16(tiny)) == 0.0f);  // rounds to zero, not to the smallest bf16
}

TEST_CASE("the bf16 kernels cast, widen and round element-wise", "[bf16]") {
  const int n = 1001;
  FlatView src("src", n), back("back", n), rounded("rounded", n);
  Kokkos::View<std::uint16_t*, DeviceSpace> half("half", n);
  auto h = Kokkos::create_mirror_view(src);
  for (int i = 0; i < n; ++i) h(i) = std::sin(0.37f * i) * std::pow(10.0f, float(i % 13 - 6));
  Kokkos::deep_copy(src, h);
  cast_to_bf16(ConstVec(src.data(), n), Bf16Vec(half.data(), n));
  widen_bf16(ConstBf16Vec(half.data(), n), Vec(back.data(), n));
  round_through_bf16(ConstVec(src.data(), n), Vec(rounded.data(), n));
  auto hb = Kokkos::create_mirror_view_and_copy(HostSpace(), back);
  auto hr = Kokkos::create_mirror_view_and_copy(HostSpace(), rounded);
  for (int i = 0; i < n; ++i) {
    INFO("element " << i << " = " << h(i));
    REQUIRE(hb(i) == from_bf16(reference(h(i))));
    REQUIRE(hr(i) == hb(i));
    REQUIRE(std::abs(hb(i) - h(i)) <= std::abs(h(i)) * (1.0f / 256));  // 8 significant bits
  }
}
