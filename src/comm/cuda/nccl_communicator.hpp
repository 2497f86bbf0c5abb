// SPDX-License-Identifier: MIT
// The NCCL backend: one NCCL communicator per process group, built from a unique id that rank 0
// creates and broadcasts over the group's MPI communicator; collectives run on the
// communication stream, after the compute stream's work, and complete through an event.
#pragma once
#include <mpi.h>
#include <nccl.h>

#include "comm/cuda/device_communicator.hpp"

namespace fsdp::comm {

// Owns an ncclComm_t: ncclCommDestroy exactly once.
class NcclComm {
 public:
  NcclComm() = default;
  // Collective over comm: every rank of it calls this with the same comm.
  static NcclComm init(MPI_Comm comm);
  NcclComm(NcclComm&& o) noexcept : c_(o.c_) { o.c_ = nullptr; }
  NcclComm& operator=(NcclComm&& o) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm() { reset(); }
  ncclComm_t get() const { return c_; }
  void reset();

 private:
  explicit NcclComm(ncclComm_t c) : c_(c) {}
  ncclComm_t c_ = nullptr;
};

// Reductions follow NCCL's order, not rank order (rings and trees, chosen by size and
// topology), so results can differ in the last bits from the MPI paths and from one rank count
// to another: bitwise rank-count independence is only guaranteed on the MPI and shared-memory
// paths. Avg is ncclAvg, which NCCL computes for floats by scaling each input by 1/n before
// summing: the same bits as sum / n when n is a power of two (barring subnormals), within
// rounding of it otherwise.
class NcclCommunicator final : public DeviceCommunicator {
 public:
  // Collective over comm; each rank must have its own GPU current (NCCL refuses two ranks on
  // one device). comm is duplicated: the caller may free it.
  explicit NcclCommunicator(MPI_Comm comm, std::string name = "world", LinkEmulation link = {},
                            cudaStream_t compute = nullptr);
  ~NcclCommunicator() override;

  const char* backend() const override { return "nccl"; }
  ncclComm_t nccl_comm() const { return nccl_.get(); }

 protected:
  std::unique_ptr<detail::Pending> start_all_gather(ConstVec send, Vec recv,
                                                    bool blocking) override;
  std::unique_ptr<detail::Pending> start_reduce_scatter(ConstVec send, Vec recv, ReduceOp op,
                                                        bool blocking) override;
  std::unique_ptr<detail::Pending> start_all_reduce(Vec buf, ReduceOp op, bool blocking) override;
  void do_broadcast(Vec buf, int root) override;
  // ncclSend/ncclRecv per peer in one group; this rank's own block is a device copy on the comm
  // stream. NCCL cannot tell a sender's count from its receiver's: they must agree (as checked
  // by debug.check_collectives), or the group hangs or truncates.
  std::unique_ptr<detail::Pending> start_all_to_all_v(ConstVec send, const PeerBlocks& send_blocks,
                                                      Vec recv, const PeerBlocks& recv_blocks,
                                                      bool blocking) override;

 private:
  NcclComm nccl_;
};

// NCCL's version as "2.28.9" (the library loaded, not the header compiled against).
std::string nccl_version();

}  // namespace fsdp::comm
