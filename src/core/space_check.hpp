// SPDX-License-Identifier: MIT
// The space check: a CPU build (cmake -DFSDP_SPACE_CHECK=ON) in which the device is a memory
// space of its own, so the discipline a GPU needs is enforced where there is no GPU.
//  - at compile time: a device View does not convert to a host View or back (core/types.hpp);
//    only deep_copy moves data between them, and create_mirror_view makes real copies, so a
//    mirror that is written and never copied back gives wrong numbers, as it would on a GPU;
//  - at run time: an element of a device View read or written outside a kernel ends the program
//    with the stack that did it. A kernel is a Kokkos parallel dispatch (seen through the Kokkos
//    Tools callbacks) or a vendor call that runs on the device on a GPU (a KernelScope: GEMM).
// In every other build KernelScope is empty and nothing here is compiled in.
#pragma once

namespace fsdp::space_check {

#if defined(FSDP_SPACE_CHECK)
extern thread_local int kernel_depth;
// After Kokkos::initialize: from then on every dispatch counts as a kernel.
void install();
[[noreturn]] void host_touched_device();
inline void on_element_access() {
  if (kernel_depth == 0) host_touched_device();
}
struct KernelScope {
  KernelScope() { ++kernel_depth; }
  ~KernelScope() { --kernel_depth; }
  KernelScope(const KernelScope&) = delete;
  KernelScope& operator=(const KernelScope&) = delete;
};
constexpr bool kEnabled = true;
#else
inline void install() {}
struct KernelScope {};
constexpr bool kEnabled = false;
#endif

}  // namespace fsdp::space_check
