// SPDX-License-Identifier: MIT
// Every View type the project uses, in one place: layouts, memory spaces and unmanaged views
// that point into a unit's flat parameter buffer.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

namespace fsdp {

using ExecSpace = Kokkos::DefaultExecutionSpace;
using DeviceSpace = ExecSpace::memory_space;
using HostSpace = Kokkos::HostSpace;
using HostExecSpace = Kokkos::DefaultHostExecutionSpace;
using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;

// Owning buffers.
using FlatView = Kokkos::View<float*, Kokkos::LayoutRight, DeviceSpace>;
using HostFlatView = Kokkos::View<float*, Kokkos::LayoutRight, HostSpace>;
using TokenView = Kokkos::View<int32_t*, Kokkos::LayoutRight, DeviceSpace>;

// Non-owning windows into flat buffers (a parameter tensor, an activation slice).
using Vec = Kokkos::View<float*, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
using ConstVec = Kokkos::View<const float*, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
using Mat = Kokkos::View<float**, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
using ConstMat = Kokkos::View<const float**, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
using ConstTokens = Kokkos::View<const int32_t*, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
// bfloat16 storage (core/bf16.hpp): the top half of an IEEE float in a uint16_t.
using Bf16Vec = Kokkos::View<std::uint16_t*, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
using ConstBf16Vec =
    Kokkos::View<const std::uint16_t*, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
// Attention's per-head score blocks (B*H, T, T).
using Att3 = Kokkos::View<float***, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
using ConstAtt3 = Kokkos::View<const float***, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;

// Host memory the program owns (std::vector data) seen as Views, for the copies at I/O
// boundaries: data in, checkpoints, metric scalars.
using HostVec = Kokkos::View<float*, HostSpace, Unmanaged>;
using HostConstVec = Kokkos::View<const float*, HostSpace, Unmanaged>;
using HostConstTokens = Kokkos::View<const int32_t*, HostSpace, Unmanaged>;

inline Vec subvec(const Vec& v, std::size_t offset, std::size_t n) {
  return Vec(v.data() + offset, n);
}
inline Mat as_mat(float* p, std::size_t rows, std::size_t cols) { return Mat(p, rows, cols); }
inline ConstMat as_cmat(const float* p, std::size_t rows, std::size_t cols) {
  return ConstMat(p, rows, cols);
}

}  // namespace fsdp
