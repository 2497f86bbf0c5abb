// SPDX-License-Identifier: MIT
// The MPI backend over a private duplicate of a communicator. When every rank is on one node it
// moves data through a shared-memory window (shm_collectives.hpp); otherwise, or when told not
// to, it uses MPI collectives with rank-ordered reductions (mpi_collectives.hpp).
#pragma once
#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/owned_comm.hpp"
#include "comm/progress_thread.hpp"
#include "comm/shm_collectives.hpp"

namespace fsdp::comm {

struct MpiOptions {
  std::string name = "world";
  // Try the one-node shared-memory path. FSDP_COMM_NO_SHM=1 in the environment turns it off too.
  bool shared_memory = true;
  // Per rank. Collectives move data in steps of at most half of it (ShmSettings::step_bytes),
  // whatever the message size, so two steps' worth is all a window needs.
  std::size_t window_bytes = std::size_t(2) << 20;
  ShmSettings shm;
  LinkEmulation link;
  // Run non-blocking shared-memory collectives on a progress thread (progress_thread.hpp).
  bool progress_thread = false;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, MpiOptions options = {});
  ~MpiCommunicator() override;

  const char* backend() const override { return shm_ ? "mpi+shm" : "mpi"; }
  bool uses_shared_memory() const { return shm_ != nullptr; }
  bool uses_single_copy() const { return shm_ && shm_->single_copy(); }
  // Whether the peers' buffers in their shared arenas (core/shared_arena.hpp) are read directly.
  bool reads_peer_arenas() const { return shm_ && shm_->peer_arenas(); }
  bool uses_progress_thread() const { return progress_ != nullptr; }
  MPI_Comm mpi_comm() const { return comm_.get(); }
  void barrier() override;

 protected:
  std::unique_ptr<detail::Pending> start_all_gather(ConstVec send, Vec recv,
                                                    bool blocking) override;
  std::unique_ptr<detail::Pending> start_reduce_scatter(ConstVec send, Vec recv, ReduceOp op,
                                                        bool blocking) override;
  std::unique_ptr<detail::Pending> start_all_reduce(Vec buf, ReduceOp op, bool blocking) override;
  std::unique_ptr<detail::Pending> start_reduce_scatter_bf16(ConstBf16Vec send, Vec recv,
                                                             ReduceOp op, bool blocking) override;
  void do_broadcast(Vec buf, int root) override;
  void do_all_to_all(ConstVec send, Vec recv) override;
  std::unique_ptr<detail::Pending> start_all_to_all_v(ConstVec send, const PeerBlocks& send_blocks,
                                                      Vec recv, const PeerBlocks& recv_blocks,
                                                      bool blocking) override;
  void all_gather_bytes(const void* send, void* recv, std::size_t bytes) override;
  void all_to_all_bytes(const void* send, void* recv, std::size_t bytes) override;

 private:
  OwnedComm comm_;                          // declared first: the window is freed before it
  std::unique_ptr<ShmCollectives> shm_;     // nullptr: the MPI path
  std::unique_ptr<ArrivalBoard> arrivals_;  // who has entered which collective (watchdog)
  std::unique_ptr<ProgressThread> progress_;  // declared after shm_: joined before it goes
  // Runs `op` on the shared-memory path: queued on the progress thread when non-blocking and
  // there is one, else here once the queue is empty.
  template <class Op>
  std::unique_ptr<detail::Pending> on_shm(bool blocking, Op op);
};

// True when FSDP_COMM_NO_SHM is set to something other than "0" or "".
bool shm_disabled_by_env();

}  // namespace fsdp::comm
