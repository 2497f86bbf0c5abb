// SPDX-License-Identifier: MIT
#include <cstdint>

#include "comm/cuda/cuda_check.hpp"
#include "comm/cuda/cuda_resources.hpp"

namespace fsdp::cuda {

Stream::Stream() { FSDP_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
Stream::~Stream() {
  if (s_ != nullptr) FSDP_CUDA_WARN(cudaStreamDestroy(s_));
}
void Stream::synchronize() const { FSDP_CUDA_CHECK(cudaStreamSynchronize(s_)); }

Event::Event() { FSDP_CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
Event::~Event() {
  if (e_ != nullptr) FSDP_CUDA_WARN(cudaEventDestroy(e_));
}
void Event::record(cudaStream_t s) { FSDP_CUDA_CHECK(cudaEventRecord(e_, s)); }
bool Event::query() const {
  const cudaError_t rc = cudaEventQuery(e_);
  if (rc == cudaErrorNotReady) return false;
  FSDP_CUDA_CHECK(rc);
  return true;
}
void Event::synchronize() const { FSDP_CUDA_CHECK(cudaEventSynchronize(e_)); }

template <class T>
DeviceBuffer<T>::DeviceBuffer(std::size_t n) : n_(n) {
  void* p = nullptr;
  if (n > 0) FSDP_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
  p_ = static_cast<T*>(p);
}
template <class T>
DeviceBuffer<T>::~DeviceBuffer() {
  if (p_ != nullptr) FSDP_CUDA_WARN(cudaFree(p_));
}
template class DeviceBuffer<float>;
template class DeviceBuffer<int>;

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) FSDP_CUDA_CHECK(cudaMallocHost(&p_, bytes));
}
PinnedBuffer::~PinnedBuffer() {
  if (p_ != nullptr) FSDP_CUDA_WARN(cudaFreeHost(p_));
}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    if (p_ != nullptr) FSDP_CUDA_WARN(cudaFreeHost(p_));
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void PinnedLease::give_back() {
  if (pool_ && buf_.bytes() > 0) pool_->release(std::move(buf_));
  pool_.reset();
}
PinnedLease& PinnedLease::operator=(PinnedLease&& o) noexcept {
  if (this != &o) {
    give_back();
    pool_ = std::move(o.pool_);
    buf_ = std::move(o.buf_);
  }
  return *this;
}
PinnedLease::~PinnedLease() { give_back(); }

PinnedLease PinnedPool::acquire(std::size_t bytes) {
  std::size_t best = free_.size();
  for (std::size_t i = 0; i < free_.size(); ++i)
    if (free_[i].bytes() >= bytes &&
        (best == free_.size() || free_[i].bytes() < free_[best].bytes()))
      best = i;
  if (best < free_.size()) {
    PinnedBuffer buf = std::move(free_[best]);
    free_.erase(free_.begin() + std::ptrdiff_t(best));
    return PinnedLease(shared_from_this(), std::move(buf));
  }
  std::size_t size = std::size_t(64) << 10;
  while (size < bytes) size *= 2;
  return PinnedLease(shared_from_this(), PinnedBuffer(size));
}

std::size_t PinnedPool::held_bytes() const {
  std::size_t b = 0;
  for (const PinnedBuffer& buf : free_) b += buf.bytes();
  return b;
}

}  // namespace fsdp::cuda
