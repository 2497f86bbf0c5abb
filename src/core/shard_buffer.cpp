// SPDX-License-Identifier: MIT
#include "core/shard_buffer.hpp"

#include "core/check.hpp"

namespace fsdp {

Vec ShardVec::device() const {
  if (host_) fatal("a shard in host memory (fsdp.offload) was asked for as device memory");
  return Vec(p_, n_);
}

PinnedVec ShardVec::host() const {
  if (!host_ && p_) fatal("a device shard was asked for as host memory (fsdp.offload)");
  return PinnedVec(p_, n_);
}

ShardVec ShardVec::sub(std::int64_t off, std::int64_t n) const {
  if (off < 0 || n < 0 || off + n > n_)
    fatal("shard slice [" + std::to_string(off) + ", " + std::to_string(off + n) +
          ") is outside a shard of " + std::to_string(n_));
  return ShardVec(p_ + off, n, host_);
}

void ShardVec::copy_to(float* dst) const {
  if (host_) Kokkos::deep_copy(HostVec(dst, n_), host());
  else Kokkos::deep_copy(HostVec(dst, n_), device());
}

void ShardVec::copy_from(const float* src) const {
  if (host_) Kokkos::deep_copy(host(), HostConstVec(src, n_));
  else Kokkos::deep_copy(device(), HostConstVec(src, n_));
}

std::vector<float> ShardVec::values() const {
  std::vector<float> v(static_cast<std::size_t>(n_));
  copy_to(v.data());
  return v;
}

void ShardVec::fill(float x) const {
  if (host_) Kokkos::deep_copy(host(), x);
  else Kokkos::deep_copy(device(), x);
}

ShardBuffer::ShardBuffer(MemoryTracker& t, const std::string& label, std::int64_t n, MemCategory c,
                         MemSpace s) {
  if (s == MemSpace::Host) host_ = HostBuffer(t, label, n, c);
  else dev_ = TrackedBuffer(t, label, n, c);
}

ShardVec ShardBuffer::view() const {
  if (host_.allocated()) return ShardVec::on_host(host_.vec());
  return ShardVec::on_device(dev_.vec());
}

}  // namespace fsdp
