// SPDX-License-Identifier: MIT
// A rank's shard of a unit's parameters, gradients or AdamW moments, in the space fsdp.offload
// chose for it at run time: the device (a TrackedBuffer) or pinned host memory (a HostBuffer).
// Code that computes on it asks for the one space it works in (device() or host()) and is told
// at once if the shard lives in the other; I/O copies it whichever it is.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/host_buffer.hpp"
#include "core/memory.hpp"

namespace fsdp {

// A non-owning view of a shard (or part of one) and the space it is in.
class ShardVec {
 public:
  ShardVec() = default;
  static ShardVec on_device(const Vec& v) { return ShardVec(v.data(), std::int64_t(v.extent(0)), false); }
  static ShardVec on_host(const PinnedVec& v) { return ShardVec(v.data(), std::int64_t(v.extent(0)), true); }

  bool in_host_memory() const { return host_; }
  std::int64_t size() const { return n_; }
  const void* data() const { return p_; }
  Vec device() const;     // fatal if the shard is in host memory
  PinnedVec host() const;  // fatal if it is on the device
  ShardVec sub(std::int64_t off, std::int64_t n) const;

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
};

// An owning shard buffer: device or host, decided when it is made.
class ShardBuffer {
 public:
  ShardBuffer() = default;
  ShardBuffer(MemoryTracker& t, const std::string& label, std::int64_t n, MemCategory c, MemSpace s);
  bool allocated() const { return dev_.allocated() || host_.allocated(); }
  bool in_host_memory() const { return host_.allocated(); }
  std::int64_t size() const { return in_host_memory() ? host_.size() : dev_.size(); }
  ShardVec view() const;
  ShardVec view(std::int64_t off, std::int64_t n) const { return view().sub(off, n); }
  Vec device() const { return view().device(); }
  PinnedVec host() const { return view().host(); }
  void reset() {
    dev_.reset();
    host_.reset();
  }

 private:
  TrackedBuffer dev_;
  HostBuffer host_;
};

}  // namespace fsdp
