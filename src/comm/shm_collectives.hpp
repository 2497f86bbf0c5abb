// SPDX-License-Identifier: MIT
// The one-node fast path: collectives through a ShmWindow in steps of at most one half-segment
// per rank. Steps alternate between the two halves, so a single barrier per step suffices.
// Mid-sized collectives read straight from the peers' buffers instead (cma.hpp; the reductions
// in shm_single_copy.cpp). The all-to-all-v is in shm_all_to_all_v.cpp.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/shm_window.hpp"
#include "core/shared_arena.hpp"

namespace fsdp::comm {

struct ShmSettings {
  // Each rank's data per step: small stays in cache, large has fewer barriers. Clipped to half
  // the window.
  std::size_t step_bytes = std::size_t(1) << 20;
  // Collectives whose full buffer is at most this may use single-copy reads (0: never); the
  // reductions also have their own size window (shm_collectives.cpp). Past it, staging with
  // streaming stores wins for the all-gather: the kernel's copy pays a read-for-ownership per line.
  std::size_t single_copy_max_bytes = std::size_t(32) << 20;
};

class ShmCollectives {
 public:
  // Collective over comm (it checks that single-copy reads work between every pair of ranks).
  ShmCollectives(MPI_Comm comm, std::unique_ptr<ShmWindow> window, ShmSettings settings);

  bool single_copy() const { return single_copy_; }
  // Whether every peer's shared arena is mapped here: buffers there are read directly.
  bool peer_arenas() const;
  // How the collectives that follow wait for late peers: the thread that runs them sets it.
  void set_sync_wait(SyncWait how) { wait_ = how; }
  void all_gather(const float* send, float* recv, std::size_t count);  // count per rank
  void reduce_scatter(const float* send, float* recv, std::size_t count, ReduceOp op);
  // bf16 blocks in, their float sum out (rank_order_sum.hpp); count is recv's elements.
  void reduce_scatter(const std::uint16_t* send, float* recv, std::size_t count, ReduceOp op);
  void all_reduce(float* buf, std::size_t count, ReduceOp op);
  // Blocks checked by the caller (PeerBlocks, in floats); a sender's count that differs from
  // its receiver's is fatal, naming `where` (shm_all_to_all_v.cpp).
  void all_to_all_v(const float* send, const PeerBlocks& send_blocks, float* recv,
                    const PeerBlocks& recv_blocks, const std::string& where);

 private:
  void gather_single_copy(const float* send, float* recv, std::size_t count);
  // Each rank reads its block of every peer's send in cache-sized pieces and sums them there:
  // one pass over the peers' data instead of a copy into the window and a second read. The
  // float one reads the first peer block straight into recv (no piece to sum from).
  void reduce_single_copy(const float* send, float* recv, std::size_t count, ReduceOp op);
  void reduce_single_copy(const std::uint16_t* send, float* recv, std::size_t count, ReduceOp op);
  // In place: each rank sums its part from the peers' buffers, then reads theirs.
  void all_reduce_single_copy(float* buf, std::size_t count, ReduceOp op);
  // Copies [at, at + bytes) of peer's published buffer: from its arena mapping where it is in
  // it, else with process_vm_readv (fatal on failure).
  void read_block(int peer, std::size_t at, void* dst, std::size_t bytes);
  // Peer q's published buffer, [at, at + bytes) of it, as this process sees it through q's
  // shared arena; nullptr when that is not in the arena.
  const void* mapped(int q, std::size_t at, std::size_t bytes) const;
  void map_peer_arenas();
  template <class T>
  bool all_mapped(const T* send, std::size_t count, std::vector<const T*>& src) const;
  void gather_staged(const float* send, float* recv, std::size_t count);
  bool probe_single_copy(MPI_Comm comm);
  // Whether the single-copy reduce-scatter / all-reduce beats staging (shm_single_copy.cpp).
  bool reduce_single_copy_pays(std::size_t full_bytes) const;
  bool all_reduce_single_copy_pays(std::size_t bytes) const;
  float* slot(int rank) const;  // this step's half of rank's segment
  void end_step() { half_ ^= 1; }

  std::unique_ptr<ShmWindow> window_;
  int rank_ = 0, size_ = 1;
  std::size_t step_;  // floats per rank per step
  std::size_t single_copy_max_;
  bool single_copy_ = false;
  int half_ = 0;
  SyncWait wait_ = SyncWait::Spin;
  std::vector<const float*> src_;  // per-step source pointers, reused
  std::vector<float> pieces_;      // reduce_single_copy's per-peer pieces, reused
  std::vector<std::shared_ptr<PeerArena>> arenas_;  // per rank: its arena mapped here, or null
  std::vector<const std::uint16_t*> src16_;         // bf16 reduce-scatter's sources, reused
};

}  // namespace fsdp::comm
