// SPDX-License-Identifier: MIT
#include "core/bf16.hpp"

#include <string>

#include "core/check.hpp"

namespace fsdp {
namespace {

void same_extent(const char* what, std::size_t a, std::size_t b) {
  if (a != b)
    fatal(std::string(what) + ": source has " + std::to_string(a) + " elements, destination " +
          std::to_string(b));
}

}  // namespace

void cast_to_bf16(ConstVec src, Bf16Vec dst) {
  same_extent("cast_to_bf16", src.extent(0), dst.extent(0));
  Kokkos::parallel_for(
      "bf16::cast", Kokkos::RangePolicy<ExecSpace>(0, src.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { dst(i) = to_bf16(src(i)); });
}

void cast_to_bf16_on_host(ConstPinnedVec src, PinnedBf16Vec dst) {
  same_extent("cast_to_bf16_on_host", src.extent(0), dst.extent(0));
  Kokkos::parallel_for(
      "bf16::cast_on_host", Kokkos::RangePolicy<HostExecSpace>(0, src.extent(0)),
      [=](const std::int64_t i) { dst(i) = to_bf16(src(i)); });
}

void widen_bf16(ConstBf16Vec src, Vec dst) {
  same_extent("widen_bf16", src.extent(0), dst.extent(0));
  Kokkos::parallel_for(
      "bf16::widen", Kokkos::RangePolicy<ExecSpace>(0, src.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { dst(i) = from_bf16(src(i)); });
}

void round_through_bf16(ConstVec src, Vec dst) {
  same_extent("round_through_bf16", src.extent(0), dst.extent(0));
  Kokkos::parallel_for(
      "bf16::round", Kokkos::RangePolicy<ExecSpace>(0, src.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { dst(i) = round_bf16(src(i)); });
}

}  // namespace fsdp
