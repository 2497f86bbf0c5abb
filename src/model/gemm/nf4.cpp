// SPDX-License-Identifier: MIT
// Written here rather than taken from bitsandbytes: its CPU build is a PyTorch extension, and
// the frozen base is quantised by the loader that reads the safetensors (no PyTorch there).
#include "model/gemm/nf4.hpp"

#include <algorithm>
#include <cmath>

namespace fsdp::kernels {

const std::array<float, 16>& nf4_levels() {
  // QLoRA's NF4 levels as fp32 (the paper's appendix E, as bitsandbytes stores them).
  static const std::array<float, 16> levels{
      -1.0f,         -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
      -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
      0.07958029955625534f,  0.16093020141124725f,  0.24611230194568634f,  0.33791524171829224f,
      0.44070982933044434f,  0.5626170039176941f,   0.7229568362236023f,   1.0f};
  return levels;
}

namespace {

// The 15 cuts between neighbouring levels, each the fp32 mean of the two.
const std::array<float, 15>& cuts() {
  static const std::array<float, 15> c = [] {
    std::array<float, 15> m{};
    const auto& l = nf4_levels();
    for (std::size_t i = 0; i < m.size(); ++i) m[i] = (l[i] + l[i + 1]) / 2.0f;
    return m;
  }();
  return c;
}

// The level of a scaled value: how many cuts lie strictly below it.
std::uint8_t level_of(float s) {
  const auto& c = cuts();
  return std::uint8_t(std::lower_bound(c.begin(), c.end(), s) - c.begin());
}

}  // namespace

void nf4_quantize(const float* x, std::int64_t n, std::uint8_t* packed, float* absmax, int block) {
  std::fill(packed, packed + nf4_bytes(n), std::uint8_t(0));
  for (std::int64_t b = 0; b * block < n; ++b) {
    const std::int64_t lo = b * block, hi = std::min(n, lo + block);
    float m = 0.0f;
    for (std::int64_t i = lo; i < hi; ++i) m = std::max(m, std::fabs(x[i]));
    // The floor keeps a block of zeros finite; a whole block stores its maximum as it is, the
    // last partial one the floored value (bitsandbytes does both).
    const float floored = std::max(m, 1e-38f);
    const bool partial = hi - lo < block;
    absmax[b] = partial ? floored : m;
    const float inv = 1.0f / floored;
    for (std::int64_t i = lo; i < hi; ++i) {
      const float s = std::clamp(partial ? x[i] / floored : x[i] * inv, -1.0f, 1.0f);
      const std::uint8_t q = level_of(s);
      packed[i / 2] |= std::uint8_t(i % 2 == 0 ? q << 4 : q);
    }
  }
  // An odd count's last byte pairs its element with a zero, which has a level of its own.
  if (n % 2 == 1) packed[n / 2] |= level_of(0.0f);
}

void nf4_dequantize(const std::uint8_t* packed, const float* absmax, std::int64_t n, float* out,
                    int block) {
  const auto& l = nf4_levels();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint8_t byte = packed[i / 2];
    const int q = i % 2 == 0 ? byte >> 4 : byte & 0xF;
    out[i] = l[std::size_t(q)] * absmax[i / block];
  }
}

}  // namespace fsdp::kernels
