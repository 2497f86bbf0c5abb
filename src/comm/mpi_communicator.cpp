// SPDX-License-Identifier: MIT
#include "comm/mpi_communicator.hpp"

#include "core/space_check.hpp"

#include <cstdlib>
#include <cstring>

#include "comm/mpi_collectives.hpp"
#include "core/check.hpp"

namespace fsdp::comm {
namespace {

int rank_of(MPI_Comm comm) {
  int r = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &r));
  return r;
}

int size_of(MPI_Comm comm) {
  int n = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &n));
  return n;
}

// Both paths read and write the views from the host (the reductions are host loops). The
// space-check build's device is host memory underneath, and its transport moves those bytes
// through raw pointers, as a CUDA-aware MPI reads device memory itself.
constexpr bool kHostViews =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, DeviceSpace>::accessible || space_check::kEnabled;

}  // namespace

bool shm_disabled_by_env() {
  const char* v = std::getenv("FSDP_COMM_NO_SHM");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, MpiOptions options)
    : Communicator(rank_of(comm), size_of(comm), options.name, options.link),
      comm_(OwnedComm::dup(comm)) {
  if (!kHostViews)
    fatal("comm::MpiCommunicator needs host-accessible views; device builds use NCCL");
  if (options.shared_memory && !shm_disabled_by_env()) {
    // Every rank reaches the same verdict: create() agrees collectively.
    auto window = ShmWindow::create(comm_.get(), options.window_bytes);
    if (window)
      shm_ = std::make_unique<ShmCollectives>(comm_.get(), std::move(window), options.shm);
  }
  arrivals_ = ArrivalBoard::create(comm_.get());
  board_ = arrivals_.get();
  if (shm_ && options.progress_thread) progress_ = std::make_unique<ProgressThread>();
}

// A template, so a blocking call (and a non-blocking one without the thread) runs op directly;
// only a queued one becomes a std::function.
template <class Op>
std::unique_ptr<detail::Pending> MpiCommunicator::on_shm(bool blocking, Op op) {
  if (progress_ && !blocking)
    return progress_->post([this, op = std::move(op)] {
      shm_->set_sync_wait(SyncWait::Sleep);
      op();
    });
  if (progress_) progress_->drain();
  shm_->set_sync_wait(SyncWait::Spin);
  op();
  return nullptr;
}

MpiCommunicator::~MpiCommunicator() = default;

void MpiCommunicator::barrier() {
  const std::uint64_t seq = enter("barrier", "none", 0);
  Watch watch([&] { return watch_label("barrier", 0); }, board_, seq);
  FSDP_MPI_CHECK(MPI_Barrier(comm_.get()));
}

std::unique_ptr<detail::Pending> MpiCommunicator::start_all_gather(ConstVec send, Vec recv,
                                                                   bool blocking) {
  const std::size_t c = send.extent(0);
  if (shm_)
    return on_shm(blocking, [this, s = send.data(), r = recv.data(), c] { shm_->all_gather(s, r, c); });
  const bool in_place = c > 0 && send.data() == recv.data() + std::size_t(rank()) * c;
  return mpi::all_gather(comm_.get(), send.data(), recv.data(), c, in_place, blocking);
}

std::unique_ptr<detail::Pending> MpiCommunicator::start_reduce_scatter(ConstVec send, Vec recv,
                                                                       ReduceOp op, bool blocking) {
  if (shm_)
    return on_shm(blocking, [this, s = send.data(), r = recv.data(), c = recv.extent(0), op] {
      shm_->reduce_scatter(s, r, c, op);
    });
  return mpi::reduce_scatter(comm_.get(), send.data(), recv.data(), recv.extent(0), op, blocking);
}

std::unique_ptr<detail::Pending> MpiCommunicator::start_reduce_scatter_bf16(ConstBf16Vec send,
                                                                            Vec recv, ReduceOp op,
                                                                            bool blocking) {
  if (shm_)
    return on_shm(blocking, [this, s = send.data(), r = recv.data(), c = recv.extent(0), op] {
      shm_->reduce_scatter(s, r, c, op);
    });
  return mpi::reduce_scatter(comm_.get(), send.data(), recv.data(), recv.extent(0), op, blocking);
}

std::unique_ptr<detail::Pending> MpiCommunicator::start_all_reduce(Vec buf, ReduceOp op,
                                                                   bool blocking) {
  if (shm_)
    return on_shm(blocking, [this, b = buf.data(), c = buf.extent(0), op] {
      shm_->all_reduce(b, c, op);
    });
  return mpi::all_reduce(comm_.get(), buf.data(), buf.extent(0), op, blocking);
}

void MpiCommunicator::do_broadcast(Vec buf, int root) {
  // Not on a hot path (initial parameters), and order-free: MPI's own broadcast is enough.
  FSDP_MPI_CHECK(MPI_Bcast(buf.data(), mpi::checked_count(buf.extent(0), "broadcast"), MPI_FLOAT,
                           root, comm_.get()));
}

void MpiCommunicator::do_all_to_all(ConstVec send, Vec recv) {
  const int c = mpi::checked_count(send.extent(0) / std::size_t(size()), "all_to_all");
  FSDP_MPI_CHECK(
      MPI_Alltoall(send.data(), c, MPI_FLOAT, recv.data(), c, MPI_FLOAT, comm_.get()));
}

std::unique_ptr<detail::Pending> MpiCommunicator::start_all_to_all_v(ConstVec send,
                                                                     const PeerBlocks& send_blocks,
                                                                     Vec recv,
                                                                     const PeerBlocks& recv_blocks,
                                                                     bool blocking) {
  std::string where = "comm::all_to_all_v on communicator '" + name() + "'";
  if (shm_)  // the blocks are copied into the op: it may run on the progress thread later
    return on_shm(blocking,
                  [this, s = send.data(), sb = send_blocks, r = recv.data(), rb = recv_blocks,
                   where = std::move(where)] { shm_->all_to_all_v(s, sb, r, rb, where); });
  return mpi::all_to_all_v(comm_.get(), send.data(), send_blocks, recv.data(), recv_blocks, where,
                           blocking);
}

void MpiCommunicator::all_gather_bytes(const void* send, void* recv, std::size_t bytes) {
  const int b = mpi::checked_count(bytes, "all_reduce (scalars)");
  FSDP_MPI_CHECK(MPI_Allgather(send, b, MPI_BYTE, recv, b, MPI_BYTE, comm_.get()));
}

void MpiCommunicator::all_to_all_bytes(const void* send, void* recv, std::size_t bytes) {
  const int b = mpi::checked_count(bytes, "exchange_counts");
  FSDP_MPI_CHECK(MPI_Alltoall(send, b, MPI_BYTE, recv, b, MPI_BYTE, comm_.get()));
}

}  // namespace fsdp::comm
