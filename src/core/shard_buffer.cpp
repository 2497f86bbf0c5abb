// SPDX-License-Identifier: MIT
#include "core/shard_buffer.hpp"

#include "core/check.hpp"
#include "core/offload_file.hpp"

namespace fsdp {

ShardVec ShardVec::on_disk(OffloadFile& f, std::int64_t offset, std::int64_t n) {
  ShardVec v(nullptr, n, false);
  v.file_ = &f;
  v.off_ = offset;
  return v;
}

OffloadFile& ShardVec::file() const {
  if (!file_) fatal("a shard in memory was asked for its offload file");
  return *file_;
}

Vec ShardVec::device() const {
  if (file_) fatal("a shard on disk (fsdp.offload = nvme) was asked for as device memory");
  if (host_) fatal("a shard in host memory (fsdp.offload) was asked for as device memory");
  return counted_ ? Vec() : Vec(p_, n_);
}

Vec ShardVec::wire() const {
  if (!counted_) return device();
  if (host_ || file_) fatal("a shard not on the device was asked for as device memory");
  return Vec(nullptr, n_);
}

PinnedVec ShardVec::host() const {
  if (file_) fatal("a shard on disk (fsdp.offload = nvme) was asked for as host memory");
  if (!host_ && (p_ || counted_)) fatal("a device shard was asked for as host memory (fsdp.offload)");
  return counted_ ? PinnedVec() : PinnedVec(p_, n_);
}

ShardVec ShardVec::sub(std::int64_t off, std::int64_t n) const {
  if (off < 0 || n < 0 || off + n > n_)
    fatal("shard slice [" + std::to_string(off) + ", " + std::to_string(off + n) +
          ") is outside a shard of " + std::to_string(n_));
  if (file_) {
    ShardVec v = *this;
    v.off_ = off_ + off * std::int64_t(sizeof(float));
    v.n_ = n;
    return v;
  }
  if (counted_) return counted(n, host_);
  return ShardVec(p_ + off, n, host_);
}

void ShardVec::copy_to(float* dst) const {
  if (counted_) return;
  if (file_) file_->read_now(off_, n_ * std::int64_t(sizeof(float)), dst);
  else if (host_) Kokkos::deep_copy(HostVec(dst, n_), host());
  else Kokkos::deep_copy(HostVec(dst, n_), device());
}

void ShardVec::copy_from(const float* src) const {
  if (counted_) return;
  if (file_) file_->write_now(off_, n_ * std::int64_t(sizeof(float)), src);
  else if (host_) Kokkos::deep_copy(host(), HostConstVec(src, n_));
  else Kokkos::deep_copy(device(), HostConstVec(src, n_));
}

std::vector<float> ShardVec::values() const {
  std::vector<float> v(static_cast<std::size_t>(n_));
  copy_to(v.data());
  return v;
}

void ShardVec::fill(float x) const {
  if (counted_) return;
  if (file_) {
    const std::vector<float> v(static_cast<std::size_t>(n_), x);
    copy_from(v.data());
  } else if (host_) Kokkos::deep_copy(host(), x);
  else Kokkos::deep_copy(device(), x);
}

ShardBuffer::ShardBuffer(MemoryTracker& t, const std::string& label, std::int64_t n, MemCategory c,
                         MemSpace s) {
  if (s == MemSpace::Host) host_ = HostBuffer(t, label, n, c);
  else dev_ = TrackedBuffer(t, label, n, c);
}

ShardBuffer::ShardBuffer(OffloadFile& f, std::int64_t n)
    : file_(&f), disk_off_(f.allocate(n * std::int64_t(sizeof(float)))), disk_n_(n) {}

ShardVec ShardBuffer::view() const {
  if (file_) return ShardVec::on_disk(*file_, disk_off_, disk_n_);
  if (host_.allocated()) {
    if (host_.size() > 0 && !host_.vec().data()) return ShardVec::counted(host_.size(), true);
    return ShardVec::on_host(host_.vec());
  }
  if (dev_.size() > 0 && !dev_.data()) return ShardVec::counted(dev_.size(), false);
  return ShardVec::on_device(dev_.vec());
}

}  // namespace fsdp
