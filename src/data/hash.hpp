// SPDX-License-Identifier: MIT
// A 64-bit mixer (the splitmix64 finalizer) shared by the sampler and the corpus generator:
// counter-based, so any sample can be recomputed from (seed, step, index) alone.
#pragma once
#include <cstdint>

namespace fsdp {

inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace fsdp
