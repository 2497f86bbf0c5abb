// SPDX-License-Identifier: MIT
// An MPI-3 shared-memory window over a one-node communicator: one segment per rank, each
// addressable by every rank through a plain pointer, and the step barrier the shm collectives use.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace fsdp::comm {

// What a rank tells its peers, at the head of its segment. Only the owner writes it, except
// `sleepers`, which the peers count themselves in and out of.
struct alignas(64) PeerInfo {
  std::uint64_t epoch;  // how many sync()s this rank has entered (its low half is a futex word)
  std::int64_t pid;
  std::uintptr_t address;  // the send buffer of the current single-copy collective
  std::uint32_t sleepers;  // peers asleep on this rank's epoch (written by them, atomically)
  std::int32_t arena_fd;   // this process's shared arena (core/shared_arena.hpp); -1: none
  std::uintptr_t arena_base;
  std::uint64_t arena_bytes;
};

// How sync() waits for late peers. Spin: the compute thread in a blocking collective, which
// has nothing else to do. Sleep: a progress thread, which must give the core back to the
// compute it shares it with, so after a short spin it sleeps on the peer's epoch (a futex).
enum class SyncWait { Spin, Sleep };

class ShmWindow {
 public:
  // Collective over comm. Returns nullptr on every rank when the ranks are not all on one node
  // or the window cannot be allocated, so the caller can fall back to MPI collectives.
  static std::unique_ptr<ShmWindow> create(MPI_Comm comm, std::size_t bytes_per_rank);

 private:
  struct Key {
    explicit Key() = default;
  };  // only create() makes windows

 public:
  ShmWindow(Key, MPI_Comm comm, MPI_Win win, std::size_t floats);
  ~ShmWindow();
  ShmWindow(const ShmWindow&) = delete;
  ShmWindow& operator=(const ShmWindow&) = delete;

  float* segment(int rank) const { return segments_[std::size_t(rank)]; }
  PeerInfo& info(int rank) const { return *infos_[std::size_t(rank)]; }
  std::size_t floats_per_rank() const { return floats_; }
  // A barrier through the window: every rank's stores before sync() are visible to every
  // rank's loads after it. Spins on the peers' epochs (an MPI_Barrier costs several times more
  // on one node), yielding the core when it waits long, as oversubscribed ranks do. From a
  // progress thread (SyncWait::Sleep) it makes no MPI call: memory fences order the accesses.
  void sync(SyncWait how = SyncWait::Spin);

 private:
  MPI_Win win_;
  std::size_t floats_;
  int rank_ = 0;
  std::uint64_t epoch_ = 0;
  std::vector<float*> segments_;
  std::vector<PeerInfo*> infos_;
};

}  // namespace fsdp::comm
