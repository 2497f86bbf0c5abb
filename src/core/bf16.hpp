// SPDX-License-Identifier: MIT
// bfloat16 as storage: the top half of an IEEE float, kept in uint16_t. Rounding is to nearest,
// ties to even (what CUDA's __float2bfloat16 and PyTorch's .to(torch.bfloat16) do); NaN stays
// NaN and the infinities stay infinite. Arithmetic is never done in bf16 here: values are
// widened to float first (a left shift, so exact).
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <cstring>

#include "core/types.hpp"

namespace fsdp {


KOKKOS_INLINE_FUNCTION std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // ties to even; overflow correctly carries into inf
  return std::uint16_t(u >> 16);
}

KOKKOS_INLINE_FUNCTION float from_bf16(std::uint16_t h) {
  const std::uint32_t u = std::uint32_t(h) << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// The float that bf16 storage of f would give back.
KOKKOS_INLINE_FUNCTION float round_bf16(float f) { return from_bf16(to_bf16(f)); }

// Element-wise kernels (extents must match; fatal otherwise).
void cast_to_bf16(ConstVec src, Bf16Vec dst);
void widen_bf16(ConstBf16Vec src, Vec dst);
void round_through_bf16(ConstVec src, Vec dst);  // dst = round_bf16(src); dst may be src
// The cast on the host execution space, for offloaded shards (fsdp.offload = params).
void cast_to_bf16_on_host(ConstPinnedVec src, PinnedBf16Vec dst);

}  // namespace fsdp
