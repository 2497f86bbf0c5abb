// SPDX-License-Identifier: MIT
// The NF4 codec (model/gemm/nf4.hpp) against its definition, without bitsandbytes (which
// tests/e2e/nf4_reference.sh compares byte for byte): each element decodes to the level nearest
// its scaled value (within half the widest gap of its block's scale), the levels themselves
// round-trip exactly, the even element is the high nibble, an odd count pads with zero's level,
// a block of zeros keeps scale 0, and a block's scale is its absolute maximum.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "model/gemm/nf4.hpp"

using namespace fsdp::kernels;

namespace {
struct Coded {
  std::vector<std::uint8_t> packed;
  std::vector<float> absmax, deq;
};
Coded code(const std::vector<float>& x) {
  const std::int64_t n = std::int64_t(x.size());
  Coded c{std::vector<std::uint8_t>(std::size_t(nf4_bytes(n))),
          std::vector<float>(std::size_t(nf4_scales(n))), std::vector<float>(x.size())};
  nf4_quantize(x.data(), n, c.packed.data(), c.absmax.data());
  nf4_dequantize(c.packed.data(), c.absmax.data(), n, c.deq.data());
  return c;
}
}  // namespace

TEST_CASE("NF4: the nearest level of each block's scale, packed two to a byte", "[nf4]") {
  const auto& l = nf4_levels();
  float widest = 0.0f;
  for (std::size_t i = 0; i + 1 < l.size(); ++i) widest = std::max(widest, l[i + 1] - l[i]);
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (std::int64_t n : {1, 63, 64, 65, 1000, 4096}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (float& v : x) v = normal(gen);
    const Coded c = code(x);
    for (std::int64_t i = 0; i < n; ++i) {
      const float scale = c.absmax[std::size_t(i / kNf4Block)];
      INFO("n " << n << " element " << i);
      REQUIRE(std::fabs(c.deq[std::size_t(i)] - x[std::size_t(i)]) <= 0.5f * widest * scale * 1.0001f);
    }
    for (std::int64_t b = 0; b < nf4_scales(n); ++b) {
      float m = 0.0f;
      for (std::int64_t i = b * kNf4Block; i < std::min(n, (b + 1) * kNf4Block); ++i)
        m = std::max(m, std::fabs(x[std::size_t(i)]));
      REQUIRE(c.absmax[std::size_t(b)] == m);
    }
  }
  // The levels times a scale decode to themselves; the maximum is level 15 or 0.
  std::vector<float> x;
  for (int rep = 0; rep < 4; ++rep)
    for (float v : l) x.push_back(v * 0.37f);
  const Coded c = code(x);
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(c.deq[i] == x[i]);
  REQUIRE(c.packed[0] == 0x01);   // levels 0 and 1: the even element in the high nibble
  REQUIRE(c.packed[7] == 0xEF);   // levels 14 and 15
}

TEST_CASE("NF4: odd counts, zeros and a partial last block", "[nf4]") {
  // An odd count's last byte holds zero's level (7) in its low nibble.
  const Coded one = code({-2.5f});
  REQUIRE(one.packed.size() == 1);
  REQUIRE(one.packed[0] == 0x07);
  REQUIRE(one.absmax[0] == 2.5f);
  REQUIRE(one.deq[0] == -2.5f);
  // A whole block of zeros keeps scale 0 and decodes to zeros; every element takes level 7.
  std::vector<float> x(std::size_t(kNf4Block), 0.0f);
  x.push_back(1.0f);  // and a partial block after it
  const Coded c = code(x);
  REQUIRE(c.absmax[0] == 0.0f);
  REQUIRE(c.packed[0] == 0x77);
  for (std::size_t i = 0; i < std::size_t(kNf4Block); ++i) REQUIRE(c.deq[i] == 0.0f);
  REQUIRE(c.absmax[1] == 1.0f);
  REQUIRE(c.deq[std::size_t(kNf4Block)] == 1.0f);
  // A partial block of zeros stores the floored scale, still decoding to zeros.
  const Coded z = code({0.0f, 0.0f, 0.0f});
  REQUIRE(z.absmax[0] == 1e-38f);
  for (float v : z.deq) REQUIRE(v == 0.0f);
}
