// SPDX-License-Identifier: MIT
#include <cstdio>

#include "comm/cuda/cuda_check.hpp"
#include "comm/cuda/nccl_communicator.hpp"
#include "core/check.hpp"

namespace fsdp::comm {
namespace {

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::Avg ? ncclAvg : ncclSum; }

}  // namespace

NcclComm NcclComm::init(MPI_Comm comm) {
  int rank = 0, n = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &n));
  ncclUniqueId id{};
  if (rank == 0) FSDP_NCCL_CHECK(ncclGetUniqueId(&id));
  FSDP_MPI_CHECK(MPI_Bcast(&id, int(sizeof(id)), MPI_BYTE, 0, comm));
  ncclComm_t c = nullptr;
  FSDP_NCCL_CHECK(ncclCommInitRank(&c, n, id, rank));
  return NcclComm(c);
}

NcclComm& NcclComm::operator=(NcclComm&& o) noexcept {
  if (this != &o) {
    reset();
    c_ = o.c_;
    o.c_ = nullptr;
  }
  return *this;
}

void NcclComm::reset() {
  if (c_ == nullptr) return;
  const ncclResult_t rc = ncclCommDestroy(c_);
  if (rc != ncclSuccess)  // teardown: report, do not abort over it
    std::fprintf(stderr, "fsdp: warning on rank %d (%s): ncclCommDestroy: %s\n", world_rank(),
                 host_name().c_str(), ncclGetErrorString(rc));
  c_ = nullptr;
}

NcclCommunicator::NcclCommunicator(MPI_Comm comm, std::string name, LinkEmulation link,
                                   cudaStream_t compute)
    : DeviceCommunicator(comm, std::move(name), link, compute), nccl_(NcclComm::init(mpi_comm())) {}

NcclCommunicator::~NcclCommunicator() {
  // Queued collectives finish before their communicator goes.
  FSDP_CUDA_WARN(cudaStreamSynchronize(comm_stream()));
}

std::unique_ptr<detail::Pending> NcclCommunicator::start_all_gather(ConstVec send, Vec recv,
                                                                    bool blocking) {
  // In place (send is recv's own block) is NCCL's in-place all-gather too.
  comm_after_compute();
  FSDP_NCCL_CHECK_COMM(ncclAllGather(send.data(), recv.data(), send.extent(0), ncclFloat,
                                     nccl_.get(), comm_stream()),
                       nccl_.get());
  return finish(blocking);
}

std::unique_ptr<detail::Pending> NcclCommunicator::start_reduce_scatter(ConstVec send, Vec recv,
                                                                        ReduceOp op,
                                                                        bool blocking) {
  comm_after_compute();
  FSDP_NCCL_CHECK_COMM(ncclReduceScatter(send.data(), recv.data(), recv.extent(0), ncclFloat,
                                         nccl_op(op), nccl_.get(), comm_stream()),
                       nccl_.get());
  return finish(blocking);
}

std::unique_ptr<detail::Pending> NcclCommunicator::start_all_reduce(Vec buf, ReduceOp op,
                                                                    bool blocking) {
  comm_after_compute();
  FSDP_NCCL_CHECK_COMM(ncclAllReduce(buf.data(), buf.data(), buf.extent(0), ncclFloat, nccl_op(op),
                                     nccl_.get(), comm_stream()),
                       nccl_.get());
  return finish(blocking);
}

void NcclCommunicator::do_broadcast(Vec buf, int root) {
  comm_after_compute();
  FSDP_NCCL_CHECK_COMM(ncclBroadcast(buf.data(), buf.data(), buf.extent(0), ncclFloat, root,
                                     nccl_.get(), comm_stream()),
                       nccl_.get());
  finish(true);
}

std::unique_ptr<detail::Pending> NcclCommunicator::start_all_to_all_v(ConstVec send,
                                                                      const PeerBlocks& send_blocks,
                                                                      Vec recv,
                                                                      const PeerBlocks& recv_blocks,
                                                                      bool blocking) {
  const std::size_t n = std::size_t(size()), me = std::size_t(rank());
  comm_after_compute();
  if (send_blocks.counts[me] > 0)
    FSDP_CUDA_CHECK(cudaMemcpyAsync(
        recv.data() + recv_blocks.displs[me], send.data() + send_blocks.displs[me],
        std::size_t(send_blocks.counts[me]) * sizeof(float), cudaMemcpyDefault, comm_stream()));
  // Empty blocks post nothing: a zero-count send or receive is no message to NCCL either.
  FSDP_NCCL_CHECK_COMM(ncclGroupStart(), nccl_.get());
  for (std::size_t q = 0; q < n; ++q) {
    if (q == me) continue;
    if (recv_blocks.counts[q] > 0)
      FSDP_NCCL_CHECK_COMM(
          ncclRecv(recv.data() + recv_blocks.displs[q], std::size_t(recv_blocks.counts[q]),
                   ncclFloat, int(q), nccl_.get(), comm_stream()),
          nccl_.get());
    if (send_blocks.counts[q] > 0)
      FSDP_NCCL_CHECK_COMM(
          ncclSend(send.data() + send_blocks.displs[q], std::size_t(send_blocks.counts[q]),
                   ncclFloat, int(q), nccl_.get(), comm_stream()),
          nccl_.get());
  }
  FSDP_NCCL_CHECK_COMM(ncclGroupEnd(), nccl_.get());
  return finish(blocking);
}

std::string nccl_version() {
  int v = 0;
  FSDP_NCCL_CHECK(ncclGetVersion(&v));
  // Since 2.9 the code is major*10000 + minor*100 + patch; before, major*1000 + minor*100 + patch.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

}  // namespace fsdp::comm
