// SPDX-License-Identifier: MIT
// Why one barrier per step is enough: a rank writes half h in step s+2 only after passing the
// barrier of step s+1, which every rank reaches only after its last read of half h in step s.
#include "comm/shm_collectives.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "comm/cma.hpp"
#include "comm/copy_kernels.hpp"
#include "comm/rank_order_sum.hpp"
#include "core/check.hpp"

namespace fsdp::comm {
namespace {

// Results at least this big are streamed past the cache (measured on a 2 MiB-L2 core: below
// it, plain stores win because the result is still cached when read).
constexpr std::size_t kStreamBytes = std::size_t(4) << 20;
// Below this the single-copy all-gather's two barriers and system calls cost more than copying
// through the window (fsdp-bench comm, 2 ranks: 1.6 us against 0.5 us at 1 KiB; even at 8 KiB).
constexpr std::size_t kGatherSingleCopyMin = std::size_t(8) << 10;

}  // namespace

ShmCollectives::ShmCollectives(MPI_Comm comm, std::unique_ptr<ShmWindow> window,
                               ShmSettings settings)
    : window_(std::move(window)), single_copy_max_(settings.single_copy_max_bytes) {
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size_));
  src_.resize(std::size_t(size_));
  const std::size_t half = window_->floats_per_rank() / 2;
  step_ = std::min(half, std::max<std::size_t>(settings.step_bytes / sizeof(float), 1));
  if (step_ >= 16) step_ = step_ / 16 * 16;  // steps start on cache lines
  // A reduce-scatter step holds at least one element of every rank's block.
  if (step_ < std::size_t(size_))
    fatal("comm: shared-memory window of " + std::to_string(window_->floats_per_rank() * 4) +
          " bytes per rank is too small for " + std::to_string(size_) + " ranks");
  window_->info(rank_).pid = cma::self_pid();
  const SharedArena* arena = SharedArena::get();
  window_->info(rank_).arena_fd = arena ? arena->fd() : -1;
  window_->info(rank_).arena_base = arena ? arena->base() : 0;
  window_->info(rank_).arena_bytes = arena ? arena->capacity() : 0;
  if (single_copy_max_ > 0) single_copy_ = probe_single_copy(comm);
  if (single_copy_) map_peer_arenas();
}

// Same rights as the single-copy reads (ptrace over the peer): a peer whose arena cannot be
// opened is read with process_vm_readv instead, so the ranks need not agree on it.
void ShmCollectives::map_peer_arenas() {
  arenas_.resize(std::size_t(size_));
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    const PeerInfo& peer = window_->info(q);
    arenas_[std::size_t(q)] =
        PeerArena::open(peer.pid, peer.arena_fd, peer.arena_base, peer.arena_bytes);
  }
}

bool ShmCollectives::peer_arenas() const {
  if (size_ == 1 || arenas_.empty()) return false;
  for (int q = 0; q < size_; ++q)
    if (q != rank_ && !arenas_[std::size_t(q)]) return false;
  return true;
}

const void* ShmCollectives::mapped(int q, std::size_t at, std::size_t bytes) const {
  const PeerArena* a = std::size_t(q) < arenas_.size() ? arenas_[std::size_t(q)].get() : nullptr;
  return a ? a->find(window_->info(q).address + at, bytes) : nullptr;
}

// Single-copy reads need ptrace rights over the peers (same user, no Yama or seccomp veto):
// try one read from every peer and agree, rather than fail in the middle of a collective.
bool ShmCollectives::probe_single_copy(MPI_Comm comm) {
  const std::uint64_t mine = 0x5eed0000u + std::uint64_t(rank_);
  window_->info(rank_).address = reinterpret_cast<std::uintptr_t>(&mine);
  window_->sync(wait_);
  bool ok = cma::compiled();
  for (int q = 0; q < size_ && ok; ++q) {
    std::uint64_t got = 0;
    const PeerInfo& peer = window_->info(q);
    ok = cma::read(peer.pid, peer.address, &got, sizeof(got)) &&
         got == 0x5eed0000u + std::uint64_t(q);
  }
  int in = ok ? 1 : 0, all = 0;
  FSDP_MPI_CHECK(MPI_Allreduce(&in, &all, 1, MPI_INT, MPI_MIN, comm));  // also keeps `mine` alive
  return all == 1;
}

float* ShmCollectives::slot(int rank) const {
  return window_->segment(rank) + std::size_t(half_) * (window_->floats_per_rank() / 2);
}

void ShmCollectives::all_gather(const float* send, float* recv, std::size_t count) {
  if (count == 0) return;
  const std::size_t bytes = std::size_t(size_) * count * sizeof(float);
  if (single_copy_ && bytes >= kGatherSingleCopyMin && bytes <= single_copy_max_)
    gather_single_copy(send, recv, count);
  else
    gather_staged(send, recv, count);
}

void ShmCollectives::gather_single_copy(const float* send, float* recv, std::size_t count) {
  window_->info(rank_).address = reinterpret_cast<std::uintptr_t>(send);
  float* own = recv + std::size_t(rank_) * count;  // first: a rank that arrives early copies
  if (own != send) {                               // rather than waits
    if (std::size_t(size_) * count * sizeof(float) >= kStreamBytes)
      stream_floats(own, send, count);
    else
      copy_floats(own, send, count);
  }
  window_->sync(wait_);
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    float* dst = recv + std::size_t(q) * count;
    if (const void* src = mapped(q, 0, count * sizeof(float))) {
      copy_floats(dst, static_cast<const float*>(src), count);
      continue;
    }
    const PeerInfo& peer = window_->info(q);
    if (!cma::read(peer.pid, peer.address, dst, count * sizeof(float)))
      fatal("comm::all_gather: process_vm_readv from rank " + std::to_string(q) +
            " failed: " + std::strerror(errno));
  }
  window_->sync(wait_);  // a peer may overwrite its send buffer only once everyone has read it
}

void ShmCollectives::gather_staged(const float* send, float* recv, std::size_t count) {
  const bool stream = std::size_t(size_) * count * sizeof(float) >= kStreamBytes;
  float* own = recv + std::size_t(rank_) * count;
  const bool in_place = own == send;
  if (!stream) copy_floats(own, send, count);
  for (std::size_t off = 0; off < count; off += step_) {
    const std::size_t m = std::min(step_, count - off);
    if (stream && !in_place)
      copy_and_stream(slot(rank_), own + off, send + off, m);
    else
      copy_floats(slot(rank_), send + off, m);
    window_->sync(wait_);
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      float* dst = recv + std::size_t(q) * count + off;
      if (stream)
        stream_floats(dst, slot(q), m);
      else
        copy_floats(dst, slot(q), m);
    }
    end_step();
  }
}

void ShmCollectives::reduce_scatter(const float* send, float* recv, std::size_t count,
                                    ReduceOp op) {
  if (reduce_single_copy_pays(std::size_t(size_) * count * sizeof(float)))
    return reduce_single_copy(send, recv, count, op);
  std::size_t per_block = step_ / std::size_t(size_);
  if (per_block >= 16) per_block = per_block / 16 * 16;  // pieces start on cache lines
  for (std::size_t off = 0; off < count; off += per_block) {
    const std::size_t m = std::min(per_block, count - off);
    // Publish the pieces the others reduce; this rank's own piece is read from send directly.
    float* mine = slot(rank_);
    for (int q = 0; q < size_; ++q)
      if (q != rank_)
        copy_floats(mine + std::size_t(q) * m, send + std::size_t(q) * count + off, m);
    window_->sync(wait_);
    for (int q = 0; q < size_; ++q)
      src_[std::size_t(q)] =
          q == rank_ ? send + std::size_t(rank_) * count + off : slot(q) + std::size_t(rank_) * m;
    sum_in_rank_order(src_.data(), size_, recv + off, m, op);
    end_step();
  }
}

void ShmCollectives::reduce_scatter(const std::uint16_t* send, float* recv, std::size_t count,
                                    ReduceOp op) {
  if (reduce_single_copy_pays(std::size_t(size_) * count * sizeof(std::uint16_t)))
    return reduce_single_copy(send, recv, count, op);
  // The same steps as the float version; a slot holds twice as many bf16 elements.
  std::size_t per_block = 2 * step_ / std::size_t(size_);
  if (per_block >= 32) per_block = per_block / 32 * 32;
  std::vector<const std::uint16_t*> src(static_cast<std::size_t>(size_));
  for (std::size_t off = 0; off < count; off += per_block) {
    const std::size_t m = std::min(per_block, count - off);
    auto* mine = reinterpret_cast<std::uint16_t*>(slot(rank_));
    for (int q = 0; q < size_; ++q)
      if (q != rank_)
        std::memcpy(mine + std::size_t(q) * m, send + std::size_t(q) * count + off,
                    m * sizeof(std::uint16_t));
    window_->sync(wait_);
    for (int q = 0; q < size_; ++q)
      src[std::size_t(q)] =
          q == rank_ ? send + std::size_t(rank_) * count + off
                     : reinterpret_cast<const std::uint16_t*>(slot(q)) + std::size_t(rank_) * m;
    sum_in_rank_order(src.data(), size_, recv + off, m, op);
    end_step();
  }
}

void ShmCollectives::all_reduce(float* buf, std::size_t count, ReduceOp op) {
  if (all_reduce_single_copy_pays(count * sizeof(float)))
    return all_reduce_single_copy(buf, count, op);
  const std::size_t n = std::size_t(size_);
  for (std::size_t off = 0; off < count; off += step_) {
    const std::size_t m = std::min(step_, count - off);
    auto lo = [&](std::size_t q) { return m * q / n; };  // rank q reduces [lo(q), lo(q+1))
    const std::size_t a = lo(std::size_t(rank_)), b = lo(std::size_t(rank_) + 1);
    float* mine = slot(rank_);
    float* chunk = buf + off;
    // Phase 1, reduce-scatter: publish everything except the part this rank reduces itself.
    copy_floats(mine, chunk, a);
    copy_floats(mine + b, chunk + b, m - b);
    window_->sync(wait_);
    for (int q = 0; q < size_; ++q) src_[std::size_t(q)] = q == rank_ ? chunk + a : slot(q) + a;
    sum_in_rank_order(src_.data(), size_, mine + a, b - a, op);  // only this rank reads it
    // Phase 2, all-gather of the reduced parts.
    window_->sync(wait_);
    for (std::size_t q = 0; q < n; ++q)
      copy_floats(chunk + lo(q), slot(int(q)) + lo(q), lo(q + 1) - lo(q));
    end_step();
  }
}

}  // namespace fsdp::comm
