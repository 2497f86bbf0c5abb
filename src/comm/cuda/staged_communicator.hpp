// SPDX-License-Identifier: MIT
// The MPI path for device buffers: data is copied to pinned host buffers on the communication
// stream, the host collectives (shared memory on one node, MPI otherwise; reductions in rank
// order) run on them, and the results are copied back. With a CUDA-aware MPI, all-gathers and
// broadcasts hand the device pointers to MPI directly; reductions are still staged, because
// the rank-ordered sum runs on the host. Bitwise the same results as the host MPI paths.
#pragma once
#include <mpi.h>

#include <memory>

#include "comm/cuda/device_communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/shm_collectives.hpp"

namespace fsdp::comm {

class StagedCommunicator final : public DeviceCommunicator {
 public:
  // Collective over comm. options: the name, link emulation and shared-memory settings, as for
  // MpiCommunicator (FSDP_COMM_NO_SHM=1 turns shared memory off here too). cuda_aware: pass
  // device pointers to MPI where no host-side arithmetic is needed (see mpi_is_cuda_aware()).
  StagedCommunicator(MPI_Comm comm, MpiOptions options, cudaStream_t compute = nullptr,
                     bool cuda_aware = false);
  ~StagedCommunicator() override;

  const char* backend() const override;
  bool uses_shared_memory() const { return shm_ != nullptr; }
  bool cuda_aware() const { return cuda_aware_; }
  std::size_t pinned_bytes() const { return pool_->held_bytes(); }  // idle staging buffers

 protected:
  std::unique_ptr<detail::Pending> start_all_gather(ConstVec send, Vec recv,
                                                    bool blocking) override;
  std::unique_ptr<detail::Pending> start_reduce_scatter(ConstVec send, Vec recv, ReduceOp op,
                                                        bool blocking) override;
  std::unique_ptr<detail::Pending> start_all_reduce(Vec buf, ReduceOp op, bool blocking) override;
  void do_broadcast(Vec buf, int root) override;
  // Stages the send blocks' extent in, runs the host all-to-all-v (shared memory or MPI), and
  // copies back the received blocks only (elements between them keep their device values).
  // CUDA-aware: MPI moves the peers' blocks between device buffers; the own block is a copy.
  std::unique_ptr<detail::Pending> start_all_to_all_v(ConstVec send, const PeerBlocks& send_blocks,
                                                      Vec recv, const PeerBlocks& recv_blocks,
                                                      bool blocking) override;

 private:
  struct Span {  // floats [offset, offset + count) of a staged buffer and its device twin
    std::size_t offset, count;
  };
  // Copies `floats` from device to pinned host memory and waits for that copy (the host
  // collective reads it next).
  void stage_in(float* host, const float* device, std::size_t floats);
  // The host collective `host` (nullptr: already done) and, once it is, the copy back of
  // `spans` to the device: the whole collective as one pending op.
  std::unique_ptr<detail::Pending> stage_out(std::unique_ptr<detail::Pending> host,
                                             const float* from, float* to, std::vector<Span> spans,
                                             std::vector<cuda::PinnedLease> leases, bool blocking);

  std::unique_ptr<ShmCollectives> shm_;  // nullptr: MPI collectives
  bool cuda_aware_;
  std::shared_ptr<cuda::PinnedPool> pool_ = std::make_shared<cuda::PinnedPool>();
};

}  // namespace fsdp::comm
