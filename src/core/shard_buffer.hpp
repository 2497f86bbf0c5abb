// SPDX-License-Identifier: MIT
// A rank's shard of a unit's parameters, gradients or AdamW moments, in the space fsdp.offload
// chose for it at run time: the device (a TrackedBuffer), pinned host memory (a HostBuffer) or a
// region of the rank's offload file on disk (fsdp.offload = nvme, core/offload_file.hpp).
// Code that computes on it asks for the one space it works in (device() or host()) and is told
// at once if the shard lives elsewhere; I/O copies it wherever it is. A shard on disk is only
// ever computed on through an IoBuffer its owner reads it into (the optimizer, the gathers).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/host_buffer.hpp"
#include "core/memory.hpp"

namespace fsdp {

class OffloadFile;

// A non-owning view of a shard (or part of one) and the space it is in.
class ShardVec {
 public:
  ShardVec() = default;
  static ShardVec on_device(const Vec& v) { return ShardVec(v.data(), std::int64_t(v.extent(0)), false); }
  static ShardVec on_host(const PinnedVec& v) { return ShardVec(v.data(), std::int64_t(v.extent(0)), true); }
  // n floats at byte offset `offset` of f (a kIoAlign-aligned region).
  static ShardVec on_disk(OffloadFile& f, std::int64_t offset, std::int64_t n);
  // A shard of n floats that a counting tracker counted and never made (core/memory.hpp): its
  // views are empty and its copies do nothing.
  static ShardVec counted(std::int64_t n, bool host) {
    ShardVec v(nullptr, n, host);
    v.counted_ = true;
    return v;
  }

  bool in_host_memory() const { return host_; }
  bool on_disk() const { return file_ != nullptr; }
  bool on_device() const { return !host_ && !file_; }
  std::int64_t size() const { return n_; }
  const void* data() const { return p_; }
  Vec device() const;     // fatal unless the shard is on the device
  // device() as a collective is handed it: a counted shard keeps its size at no address
  // (TrackedBuffer::wire). Never for a kernel.
  Vec wire() const;
  PinnedVec host() const;  // fatal unless it is in host memory
  ShardVec sub(std::int64_t off, std::int64_t n) const;
  // On disk: its file and byte offset there.
  OffloadFile& file() const;
  std::int64_t file_offset() const { return off_; }

  // I/O boundaries (checkpoints, weights, tests): whole-shard copies from and to host memory.
  void copy_to(float* dst) const;
  void copy_from(const float* src) const;
  std::vector<float> values() const;
  void fill(float x) const;

 private:
  ShardVec(float* p, std::int64_t n, bool host) : p_(p), n_(n), host_(host) {}
  float* p_ = nullptr;
  std::int64_t n_ = 0;
  bool host_ = false;
  OffloadFile* file_ = nullptr;
  std::int64_t off_ = 0;  // bytes into file_
  bool counted_ = false;
};

// An owning shard buffer: device or host, decided when it is made.
class ShardBuffer {
 public:
  ShardBuffer() = default;
  ShardBuffer(MemoryTracker& t, const std::string& label, std::int64_t n, MemCategory c, MemSpace s);
  // A region of n floats in the rank's offload file (zeros until written: the file's room is
  // reserved with posix_fallocate, which zero-fills).
  ShardBuffer(OffloadFile& f, std::int64_t n);
  bool allocated() const { return dev_.allocated() || host_.allocated() || file_; }
  bool in_host_memory() const { return host_.allocated(); }
  bool on_disk() const { return file_ != nullptr; }
  std::int64_t size() const {
    return file_ ? disk_n_ : in_host_memory() ? host_.size() : dev_.size();
  }
  ShardVec view() const;
  ShardVec view(std::int64_t off, std::int64_t n) const { return view().sub(off, n); }
  Vec device() const { return view().device(); }
  PinnedVec host() const { return view().host(); }
  void reset() {  // a disk region stays the file's (the file goes as a whole)
    dev_.reset();
    host_.reset();
    file_ = nullptr;
  }

 private:
  TrackedBuffer dev_;
  HostBuffer host_;
  OffloadFile* file_ = nullptr;
  std::int64_t disk_off_ = 0, disk_n_ = 0;
};

}  // namespace fsdp
