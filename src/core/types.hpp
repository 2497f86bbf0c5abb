// SPDX-License-Identifier: MIT
// Every View type the project uses, in one place: layouts, memory spaces and unmanaged views
// that point into a unit's flat parameter buffer.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>

#if defined(FSDP_SPACE_CHECK)
#include "core/space_check.hpp"
#endif

namespace fsdp {

using ExecSpace = Kokkos::DefaultExecutionSpace;
#if defined(FSDP_SPACE_CHECK)
// The space-check build (core/space_check.hpp): on a CPU, "device" memory is a space of its
// own that host code cannot see. Host and device views do not convert into each other, mirrors
// are real copies, and any element access outside a kernel ends the program.
struct CheckedDeviceName {
  static constexpr const char* get_name() { return "FsdpCheckedDevice"; }
};
using DeviceSpace = Kokkos::Experimental::LogicalMemorySpace<
    Kokkos::HostSpace, ExecSpace, CheckedDeviceName,
    Kokkos::Experimental::LogicalSpaceSharesAccess::no_shared_access>;
#else
using DeviceSpace = ExecSpace::memory_space;
#endif
using HostSpace = Kokkos::HostSpace;
using HostExecSpace = Kokkos::DefaultHostExecutionSpace;
// Where fsdp.offload keeps what it moves off the device: page-locked host memory on a GPU, so
// the copies to and from the device run asynchronously on the copy engines (core/host_copy.hpp).
// On a CPU it is plain host memory; the space-check build then keeps it apart from its "device".
#if defined(KOKKOS_ENABLE_CUDA)
using PinnedSpace = Kokkos::CudaHostPinnedSpace;
#else
using PinnedSpace = Kokkos::HostSpace;
#endif
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
using ConstBf16Mat =
    Kokkos::View<const std::uint16_t**, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
// Attention's per-head score blocks (B*H, T, T).
using Att3 = Kokkos::View<float***, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;
using ConstAtt3 = Kokkos::View<const float***, Kokkos::LayoutRight, DeviceSpace, Unmanaged>;

// Host memory the program owns (std::vector data) seen as Views, for the copies at I/O
// boundaries: data in, checkpoints, metric scalars.
using HostVec = Kokkos::View<float*, HostSpace, Unmanaged>;
using HostConstVec = Kokkos::View<const float*, HostSpace, Unmanaged>;
using HostConstTokens = Kokkos::View<const int32_t*, HostSpace, Unmanaged>;

// Offloaded state (fsdp.offload): host kernels (the host optimizer) work on these; device
// kernels take Vec, so handing them a host buffer does not compile where the spaces differ.
using PinnedVec = Kokkos::View<float*, Kokkos::LayoutRight, PinnedSpace, Unmanaged>;
using ConstPinnedVec = Kokkos::View<const float*, Kokkos::LayoutRight, PinnedSpace, Unmanaged>;
using PinnedBf16Vec = Kokkos::View<std::uint16_t*, Kokkos::LayoutRight, PinnedSpace, Unmanaged>;
using ConstPinnedBf16Vec =
    Kokkos::View<const std::uint16_t*, Kokkos::LayoutRight, PinnedSpace, Unmanaged>;

inline Vec subvec(const Vec& v, std::size_t offset, std::size_t n) {
  return Vec(v.data() + offset, n);
}
inline Mat as_mat(float* p, std::size_t rows, std::size_t cols) { return Mat(p, rows, cols); }
inline ConstMat as_cmat(const float* p, std::size_t rows, std::size_t cols) {
  return ConstMat(p, rows, cols);
}

}  // namespace fsdp

#if defined(FSDP_SPACE_CHECK)
// Kokkos 3 checks every View element access against the space the code runs in; host code
// "runs in" HostSpace, kernels too on a CPU. This specialisation tells the two apart: inside a
// kernel (a parallel dispatch, or a vendor call marked as one) the access is the device's own.
template <>
struct Kokkos::Impl::verify_space<Kokkos::HostSpace, fsdp::DeviceSpace, false> {
  static void check() { fsdp::space_check::on_element_access(); }
};

namespace Kokkos::Impl {
// Kokkos 3.4's copies for logical spaces take a non-const source and so cannot copy from a
// View of const; these take the bytes as any host copy does (the space is host memory).
template <class Dst, class Src, class Exec>
struct FsdpCheckedCopy {
  FsdpCheckedCopy(void* dst, const void* src, size_t n) {
    DeepCopy<HostSpace, HostSpace, Exec>(dst, src, n);
  }
  FsdpCheckedCopy(const Exec& exec, void* dst, const void* src, size_t n) {
    DeepCopy<HostSpace, HostSpace, Exec>(exec, dst, src, n);
  }
};
template <class Exec>
struct DeepCopy<fsdp::DeviceSpace, HostSpace, Exec>
    : FsdpCheckedCopy<fsdp::DeviceSpace, HostSpace, Exec> {
  using FsdpCheckedCopy<fsdp::DeviceSpace, HostSpace, Exec>::FsdpCheckedCopy;
};
template <class Exec>
struct DeepCopy<HostSpace, fsdp::DeviceSpace, Exec>
    : FsdpCheckedCopy<HostSpace, fsdp::DeviceSpace, Exec> {
  using FsdpCheckedCopy<HostSpace, fsdp::DeviceSpace, Exec>::FsdpCheckedCopy;
};
template <class Exec>
struct DeepCopy<fsdp::DeviceSpace, fsdp::DeviceSpace, Exec>
    : FsdpCheckedCopy<fsdp::DeviceSpace, fsdp::DeviceSpace, Exec> {
  using FsdpCheckedCopy<fsdp::DeviceSpace, fsdp::DeviceSpace, Exec>::FsdpCheckedCopy;
};
}  // namespace Kokkos::Impl
#endif
