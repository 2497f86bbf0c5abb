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

inline Vec subvec(const Vec& v, std::size_t offset, std::size_t n) {
  return Vec(v.data() + offset, n);
}
inline Mat as_mat(float* p, std::size_t rows, std::size_t cols) { return Mat(p, rows, cols); }
inline ConstMat as_cmat(const float* p, std::size_t rows, std::size_t cols) {
  return ConstMat(p, rows, cols);
}

}  // namespace fsdp
