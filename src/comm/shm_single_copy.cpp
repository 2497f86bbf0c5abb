// SPDX-License-Identifier: MIT
// The reductions that read the peers' buffers straight instead of staging them through the
// window: a barrier publishes every rank's buffer address, each rank reads what it sums, and a
// last barrier keeps the buffers alive until everyone has read them. A peer's buffer in its
// shared arena (core/shared_arena.hpp) is read through this process's mapping of it; any other
// is copied in pieces with process_vm_readv (cma.hpp).
// The sums keep ReduceOp's rank order; only x0 + x1 == x1 + x0 is used, which is exact.
#include "comm/shm_collectives.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "comm/cma.hpp"
#include "comm/rank_order_sum.hpp"
#include "core/check.hpp"

namespace fsdp::comm {
namespace {

// A single-copy reduce-scatter reads each peer in pieces of this many bytes, which stay in L2
// until summed. It pays two barriers and a system call per peer and piece, so small buffers
// stage instead, and past kReduceSingleCopyMax staging with streaming stores is as fast
// (measured with fsdp-bench comm on 2 ranks: the crossovers are near 32 KiB and 16-32 MiB).
constexpr std::size_t kPieceBytes = std::size_t(256) << 10;
constexpr std::size_t kReduceSingleCopyMin = std::size_t(32) << 10;
constexpr std::size_t kReduceSingleCopyMax = std::size_t(16) << 20;
// The single-copy all-reduce pays three barriers: below about 2 MiB the staged one is faster.
constexpr std::size_t kAllReduceSingleCopyMin = std::size_t(2) << 20;

}  // namespace

// A lone rank has no peer to read from: its staged path is a copy.
bool ShmCollectives::reduce_single_copy_pays(std::size_t full_bytes) const {
  return single_copy_ && size_ > 1 && full_bytes >= kReduceSingleCopyMin &&
         full_bytes <= std::min(single_copy_max_, kReduceSingleCopyMax);
}

bool ShmCollectives::all_reduce_single_copy_pays(std::size_t bytes) const {
  return single_copy_ && size_ > 1 && bytes >= kAllReduceSingleCopyMin &&
         bytes <= std::min(single_copy_max_, kReduceSingleCopyMax);
}

void ShmCollectives::reduce_single_copy(const std::uint16_t* send, float* recv, std::size_t count,
                                        ReduceOp op) {
  using T = std::uint16_t;
  const std::size_t piece = std::min(count, kPieceBytes / sizeof(T));
  const std::size_t slots = std::size_t(size_) * piece * sizeof(T);
  if (pieces_.size() * sizeof(float) < slots) pieces_.resize((slots + 3) / 4);
  std::vector<const T*>& src = src16_;
  window_->info(rank_).address = reinterpret_cast<std::uintptr_t>(send);
  window_->sync(wait_);
  if (all_mapped(send, count, src)) {
    sum_in_rank_order(src.data(), size_, recv, count, op);
    window_->sync(wait_);
    return;
  }
  for (std::size_t off = 0; off < count; off += piece) {
    const std::size_t m = std::min(piece, count - off);
    const std::size_t at = (std::size_t(rank_) * count + off) * sizeof(T);
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) {
        src[std::size_t(q)] = send + std::size_t(rank_) * count + off;
        continue;
      }
      T* dst = reinterpret_cast<T*>(pieces_.data()) + std::size_t(q) * piece;
      read_block(q, at, dst, m * sizeof(T));
      src[std::size_t(q)] = dst;
    }
    sum_in_rank_order(src.data(), size_, recv + off, m, op);
  }
  window_->sync(wait_);  // a peer may overwrite its send buffer only once everyone has read it
}

// Whether every peer's block for this rank (count elements) is in its arena; src is then each
// rank's block in rank order (this rank's from its own send), ready for sum_in_rank_order.
// Either way src has one entry per rank.
template <class T>
bool ShmCollectives::all_mapped(const T* send, std::size_t count,
                                std::vector<const T*>& src) const {
  const std::size_t at = std::size_t(rank_) * count * sizeof(T), bytes = count * sizeof(T);
  src.resize(std::size_t(size_));
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) {
      src[std::size_t(q)] = send + std::size_t(rank_) * count;
      continue;
    }
    const void* p = mapped(q, at, bytes);
    if (!p) return false;
    src[std::size_t(q)] = static_cast<const T*>(p);
  }
  return true;
}

void ShmCollectives::read_block(int q, std::size_t at, void* dst, std::size_t bytes) {
  if (const void* src = mapped(q, at, bytes)) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const PeerInfo& peer = window_->info(q);
  if (!cma::read(peer.pid, peer.address + at, dst, bytes))
    fatal("comm: single-copy read (process_vm_readv) from rank " + std::to_string(q) +
          " failed: " + std::strerror(errno));
}

void ShmCollectives::reduce_single_copy(const float* send, float* recv, std::size_t count,
                                        ReduceOp op) {
  // x0 + x1 == x1 + x0 exactly, so the first remote one of blocks 0 and 1 can land straight in
  // recv and the other be added to it; blocks 2.. follow in rank order.
  const std::size_t piece = std::min(count, kPieceBytes / sizeof(float));
  if (pieces_.size() < piece) pieces_.resize(piece);
  const float* own = send + std::size_t(rank_) * count;
  const int first = rank_ == 0 ? 1 : 0, second = 1 - first;
  window_->info(rank_).address = reinterpret_cast<std::uintptr_t>(send);
  window_->sync(wait_);
  if (all_mapped(send, count, src_)) {
    sum_in_rank_order(src_.data(), size_, recv, count, op);  // one pass, no copy
    window_->sync(wait_);
    return;
  }
  for (std::size_t off = 0; off < count; off += piece) {
    const std::size_t m = std::min(piece, count - off);
    const std::size_t at = (std::size_t(rank_) * count + off) * sizeof(float);
    float* dst = recv + off;
    read_block(first, at, dst, m * sizeof(float));
    auto add = [&](int q) {
      if (q == rank_) {
        accumulate_floats(dst, own + off, m);
        return;
      }
      read_block(q, at, pieces_.data(), m * sizeof(float));
      accumulate_floats(dst, pieces_.data(), m);
    };
    add(second);
    for (int q = 2; q < size_; ++q) add(q);
    finish_op(dst, size_, m, op);
  }
  window_->sync(wait_);  // a peer may overwrite its send buffer only once everyone has read it
}

void ShmCollectives::all_reduce_single_copy(float* buf, std::size_t count, ReduceOp op) {
  const std::size_t n = std::size_t(size_);
  auto lo = [&](std::size_t q) { return count * q / n; };  // rank q reduces [lo(q), lo(q+1))
  const std::size_t a = lo(std::size_t(rank_)), b = lo(std::size_t(rank_) + 1);
  const std::size_t piece = kPieceBytes / sizeof(float);
  if (pieces_.size() < 2 * piece) pieces_.resize(2 * piece);
  float* const temp = pieces_.data();
  float* const acc = pieces_.data() + piece;
  window_->info(rank_).address = reinterpret_cast<std::uintptr_t>(buf);
  window_->sync(wait_);
  // Phase 1: this rank's part, summed in rank order from every rank's buffer. Peers only read
  // their own parts of this buffer meanwhile, so the sum can go straight back into it. Ranks 0
  // and 1 start from their own block (x0 + x1 == x1 + x0); the others sum in a piece first.
  for (std::size_t off = a; off < b; off += piece) {
    const std::size_t m = std::min(piece, b - off);
    const std::size_t at = off * sizeof(float);
    float* const sum = rank_ <= 1 ? buf + off : acc;
    auto add_remote = [&](int q) {
      read_block(q, at, temp, m * sizeof(float));
      accumulate_floats(sum, temp, m);
    };
    if (rank_ <= 1) {
      add_remote(1 - rank_);
    } else {
      read_block(0, at, acc, m * sizeof(float));
      add_remote(1);
    }
    for (int q = 2; q < size_; ++q) {
      if (q == rank_)
        accumulate_floats(sum, buf + off, m);
      else
        add_remote(q);
    }
    finish_op(sum, size_, m, op);
    if (sum != buf + off) std::memcpy(buf + off, sum, m * sizeof(float));
  }
  window_->sync(wait_);
  // Phase 2: every other rank's summed part, read straight into place.
  for (int q = 0; q < size_; ++q)
    if (q != rank_)
      read_block(q, lo(std::size_t(q)) * sizeof(float), buf + lo(std::size_t(q)),
                 (lo(std::size_t(q) + 1) - lo(std::size_t(q))) * sizeof(float));
  window_->sync(wait_);  // a peer may change its buffer only once everyone has read it
}

}  // namespace fsdp::comm
