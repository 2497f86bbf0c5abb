// SPDX-License-Identifier: MIT
// NormalFloat-4 (QLoRA, Dettmers et al. 2023), the storage of a frozen base under
// model.base_dtype = nf4: each block of 64 consecutive elements keeps its absolute maximum as
// an fp32 scale and every element as the nearest of 16 levels of [-1, 1] (the quantiles of a
// normal distribution, with an exact zero), two elements to a byte. Defined as bitsandbytes
// computes it on a CPU (its default backend), so that a base quantised here and there is the
// same bytes: an element is scaled by the reciprocal of its block's maximum (a last, partial
// block divides by it instead), clamped to [-1, 1], and takes the level whose interval it falls
// in, the intervals cut at the fp32 midpoints between neighbouring levels (a value on a cut takes
// the lower level); the even element of a pair is the byte's high nibble. A block of zeros keeps
// the scale 0. Dequantised, an element is its level times its block's scale, in fp32.
#pragma once
#include <array>
#include <cstdint>

namespace fsdp::kernels {

constexpr int kNf4Block = 64;

// The 16 levels, lowest first (code q is levels[q]).
const std::array<float, 16>& nf4_levels();

// Bytes and scales of n elements: ceil(n / 2) and ceil(n / block).
inline std::int64_t nf4_bytes(std::int64_t n) { return (n + 1) / 2; }
inline std::int64_t nf4_scales(std::int64_t n, int block = kNf4Block) {
  return (n + block - 1) / block;
}

// x[n] -> packed[nf4_bytes(n)] and absmax[nf4_scales(n)]. Non-finite input is the caller's to
// refuse (a NaN has no level).
void nf4_quantize(const float* x, std::int64_t n, std::uint8_t* packed, float* absmax,
                  int block = kNf4Block);
// packed and absmax of n elements -> out[n].
void nf4_dequantize(const std::uint8_t* packed, const float* absmax, std::int64_t n, float* out,
                    int block = kNf4Block);

}  // namespace fsdp::kernels
