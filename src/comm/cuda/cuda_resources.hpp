// SPDX-License-Identifier: MIT
// RAII owners of the CUDA handles the communication layer uses: a stream, an event, device and
// pinned host buffers, and a pool that recycles pinned buffers (cudaMallocHost costs ~ms).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace fsdp::cuda {

// A non-blocking stream: it does not wait for, nor hold up, the legacy default stream.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void synchronize() const;  // this stream only, never the whole device

 private:
  cudaStream_t s_ = nullptr;
};

// A timing-free event (the cheapest kind to record and wait on).
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s);
  bool query() const;        // true once the work before the record has finished
  void synchronize() const;  // the host waits for that work

 private:
  cudaEvent_t e_ = nullptr;
};

// Device memory from cudaMalloc: for tests and benchmarks (the trainer's buffers are Views).
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* data() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// Page-locked host memory (cudaMallocHost): the only host memory cudaMemcpyAsync copies
// asynchronously, and at full PCIe/NVLink-C2C speed.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) {
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  float* floats() const { return static_cast<float*>(p_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

class PinnedPool;

// A pinned buffer on loan from a pool, returned when the lease ends (the pool may be gone by
// then: the lease keeps it alive).
class PinnedLease {
 public:
  PinnedLease() = default;
  PinnedLease(std::shared_ptr<PinnedPool> pool, PinnedBuffer buf)
      : pool_(std::move(pool)), buf_(std::move(buf)) {}
  PinnedLease(PinnedLease&&) noexcept = default;
  PinnedLease& operator=(PinnedLease&& o) noexcept;
  ~PinnedLease();
  float* floats() const { return buf_.floats(); }

 private:
  void give_back();
  std::shared_ptr<PinnedPool> pool_;
  PinnedBuffer buf_;
};

class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  // The smallest free buffer of at least `bytes`, else a new one (rounded up to a power of two
  // from 64 KiB, so buffers of nearby sizes are reused).
  PinnedLease acquire(std::size_t bytes);
  void release(PinnedBuffer buf) { free_.push_back(std::move(buf)); }
  std::size_t held_bytes() const;  // free buffers only

 private:
  std::vector<PinnedBuffer> free_;
};

}  // namespace fsdp::cuda
