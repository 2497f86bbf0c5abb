// SPDX-License-Identifier: MIT
// Tracked buffers in host memory that the device copies to and from (fsdp.offload): pinned on a
// GPU build (PinnedSpace, core/types.hpp). Their views are PinnedVec, never Vec, so only host
// kernels and the copies of core/host_copy.hpp can be handed them. Freed buffers are kept for
// the next request of the same size, as for device buffers: pinning memory costs milliseconds.
#pragma once
#include <cstdint>
#include <string>

#include "core/memory.hpp"

namespace fsdp {

class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(MemoryTracker& t, const std::string& label, std::int64_t n, MemCategory c,
             Dtype d = Dtype::F32, Fill f = Fill::Zero);
  HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { reset(); }

  void reset();
  bool allocated() const { return tracker_ != nullptr; }
  std::int64_t size() const { return n_; }  // elements of dtype()
  std::int64_t bytes() const { return words_ * 4; }
  // On a counting tracker (MemoryTracker::counting_only) the views are empty.
  PinnedVec vec() const { return PinnedVec(view_.data(), held() ? n_ : 0); }
  PinnedVec vec(std::int64_t off, std::int64_t n) const {
    return held() ? PinnedVec(view_.data() + off, n) : PinnedVec();
  }
  ConstPinnedVec cvec() const { return ConstPinnedVec(view_.data(), held() ? n_ : 0); }
  PinnedBf16Vec bf16() const {
    return PinnedBf16Vec(reinterpret_cast<std::uint16_t*>(view_.data()), held() ? n_ : 0);
  }

  // Frees every cached host buffer (also done at Kokkos::finalize).
  static void release_cache();

 private:
  using Storage = Kokkos::View<float*, Kokkos::LayoutRight, PinnedSpace>;
  MemoryTracker* tracker_ = nullptr;
  Storage view_;
  std::string label_;
  bool held() const { return view_.data() != nullptr; }
  std::int64_t n_ = 0, words_ = 0;
  MemCategory cat_ = MemCategory::OptimizerState;
};

}  // namespace fsdp
