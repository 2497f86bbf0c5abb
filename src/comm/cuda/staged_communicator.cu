// SPDX-License-Identifier: MIT
// A staged collective: comm stream waits for compute; device -> pinned copy, and the host waits
// for it; the host collective (maybe in flight, as an MPI request); then, once that is done,
// pinned -> device copy and a completion event. Each collective holds its own pinned buffers
// (from the pool) until that event, so several can be in flight.
#include <functional>
#include <vector>

#include "comm/cuda/cuda_check.hpp"
#include "comm/cuda/staged_communicator.hpp"
#include "comm/mpi_collectives.hpp"
#include "comm/shm_window.hpp"
#include "core/check.hpp"

namespace fsdp::comm {
namespace {

class StagedPending final : public detail::Pending {
 public:
  using CopyBack = std::function<std::shared_ptr<cuda::Event>()>;
  StagedPending(std::unique_ptr<detail::Pending> host, CopyBack copy_back,
                std::vector<cuda::PinnedLease> leases)
      : leases_(std::move(leases)), host_(std::move(host)), copy_back_(std::move(copy_back)) {
    if (!host_) done_ = copy_back_();  // the host part is done: queue the copy back now
  }

  // Never destroyed early by a Handle (it waits first); should it be, the pinned buffers stay
  // until nothing reads or writes them any more.
  ~StagedPending() override {
    if (host_) host_->wait();
    if (done_) done_->synchronize();
  }

  bool test() override {
    if (host_) {
      if (!host_->test()) return false;
      host_.reset();
    }
    if (!done_) done_ = copy_back_();
    return done_->query();
  }

  void wait() override {
    if (host_) {
      host_->wait();
      host_.reset();
    }
    if (!done_) done_ = copy_back_();
    done_->synchronize();
  }

 private:
  std::vector<cuda::PinnedLease> leases_;  // first: released last
  std::unique_ptr<detail::Pending> host_;
  CopyBack copy_back_;
  std::shared_ptr<cuda::Event> done_;
};

}  // namespace

StagedCommunicator::StagedCommunicator(MPI_Comm comm, MpiOptions options, cudaStream_t compute,
                                       bool cuda_aware)
    : DeviceCommunicator(comm, options.name, options.link, compute), cuda_aware_(cuda_aware) {
  if (options.shared_memory && !shm_disabled_by_env()) {
    // Every rank reaches the same verdict: create() agrees collectively.
    auto window = ShmWindow::create(mpi_comm(), options.window_bytes);
    if (window) shm_ = std::make_unique<ShmCollectives>(mpi_comm(), std::move(window), options.shm);
  }
}

StagedCommunicator::~StagedCommunicator() = default;

const char* StagedCommunicator::backend() const {
  if (cuda_aware_) return shm_ ? "mpi+shm (CUDA-aware)" : "mpi (CUDA-aware)";
  return shm_ ? "mpi+shm (staged)" : "mpi (staged)";
}

void StagedCommunicator::stage_in(float* host, const float* device, std::size_t floats) {
  FSDP_CUDA_CHECK(
      cudaMemcpyAsync(host, device, floats * sizeof(float), cudaMemcpyDefault, comm_stream()));
  FSDP_CUDA_CHECK(cudaStreamSynchronize(comm_stream()));
}

std::unique_ptr<detail::Pending> StagedCommunicator::stage_out(
    std::unique_ptr<detail::Pending> host, const float* from, float* to, std::vector<Span> spans,
    std::vector<cuda::PinnedLease> leases, bool blocking) {
  auto copy_back = [this, from, to, spans = std::move(spans)] {
    for (const Span& s : spans)
      if (s.count > 0)
        FSDP_CUDA_CHECK(cudaMemcpyAsync(to + s.offset, from + s.offset, s.count * sizeof(float),
                                        cudaMemcpyDefault, comm_stream()));
    return record_done();
  };
  auto op = std::make_unique<StagedPending>(std::move(host), copy_back, std::move(leases));
  if (blocking) {
    op->wait();
    return nullptr;
  }
  return op;
}

std::unique_ptr<detail::Pending> StagedCommunicator::start_all_gather(ConstVec send, Vec recv,
                                                                      bool blocking) {
  const std::size_t c = send.extent(0), n = std::size_t(size()), me = std::size_t(rank());
  if (c == 0) return nullptr;
  comm_after_compute();
  if (cuda_aware_) {
    // MPI reads and writes device memory itself; it must see the compute's writes first.
    FSDP_CUDA_CHECK(cudaStreamSynchronize(comm_stream()));
    const bool in_place = send.data() == recv.data() + me * c;
    return mpi::all_gather(mpi_comm(), send.data(), recv.data(), c, in_place, blocking);
  }
  std::vector<cuda::PinnedLease> leases;
  leases.push_back(pool_->acquire(n * c * sizeof(float)));
  float* all = leases.back().floats();
  float* own = all + me * c;
  stage_in(own, send.data(), c);
  std::unique_ptr<detail::Pending> host;
  if (shm_)
    shm_->all_gather(own, all, c);  // in place: own is all's block of this rank
  else
    host = mpi::all_gather(mpi_comm(), own, all, c, /*in_place=*/true, blocking);
  return stage_out(std::move(host), all, recv.data(), {{0, n * c}}, std::move(leases), blocking);
}

std::unique_ptr<detail::Pending> StagedCommunicator::start_reduce_scatter(ConstVec send, Vec recv,
                                                                          ReduceOp op,
                                                                          bool blocking) {
  const std::size_t c = recv.extent(0), n = std::size_t(size());
  if (c == 0) return nullptr;
  comm_after_compute();
  std::vector<cuda::PinnedLease> leases;
  leases.push_back(pool_->acquire(n * c * sizeof(float)));
  leases.push_back(pool_->acquire(c * sizeof(float)));
  float* in = leases[0].floats();
  float* out = leases[1].floats();
  stage_in(in, send.data(), n * c);
  std::unique_ptr<detail::Pending> host;
  if (shm_)
    shm_->reduce_scatter(in, out, c, op);
  else
    host = mpi::reduce_scatter(mpi_comm(), in, out, c, op, blocking);
  return stage_out(std::move(host), out, recv.data(), {{0, c}}, std::move(leases), blocking);
}

std::unique_ptr<detail::Pending> StagedCommunicator::start_all_reduce(Vec buf, ReduceOp op,
                                                                      bool blocking) {
  const std::size_t count = buf.extent(0);
  if (count == 0) return nullptr;
  comm_after_compute();
  std::vector<cuda::PinnedLease> leases;
  leases.push_back(pool_->acquire(count * sizeof(float)));
  float* h = leases[0].floats();
  stage_in(h, buf.data(), count);
  std::unique_ptr<detail::Pending> host;
  if (shm_)
    shm_->all_reduce(h, count, op);
  else
    host = mpi::all_reduce(mpi_comm(), h, count, op, blocking);
  return stage_out(std::move(host), h, buf.data(), {{0, count}}, std::move(leases), blocking);
}

void StagedCommunicator::do_broadcast(Vec buf, int root) {
  const std::size_t count = buf.extent(0);
  if (count == 0) return;
  const int c = mpi::checked_count(count, "broadcast");
  comm_after_compute();
  if (cuda_aware_) {
    FSDP_CUDA_CHECK(cudaStreamSynchronize(comm_stream()));
    FSDP_MPI_CHECK(MPI_Bcast(buf.data(), c, MPI_FLOAT, root, mpi_comm()));
    return;
  }
  std::vector<cuda::PinnedLease> leases;
  leases.push_back(pool_->acquire(count * sizeof(float)));
  float* h = leases[0].floats();
  if (rank() == root) stage_in(h, buf.data(), count);
  FSDP_MPI_CHECK(MPI_Bcast(h, c, MPI_FLOAT, root, mpi_comm()));
  stage_out(nullptr, h, buf.data(), {{0, count}}, std::move(leases), /*blocking=*/true);
}

std::unique_ptr<detail::Pending> StagedCommunicator::start_all_to_all_v(
    ConstVec send, const PeerBlocks& send_blocks, Vec recv, const PeerBlocks& recv_blocks,
    bool blocking) {
  const std::size_t me = std::size_t(rank());
  const std::string where = "comm::all_to_all_v on communicator '" + name() + "'";
  comm_after_compute();
  if (cuda_aware_) {
    PeerBlocks peers_send = send_blocks, peers_recv = recv_blocks;
    if (send_blocks.counts[me] > 0)
      FSDP_CUDA_CHECK(cudaMemcpyAsync(
          recv.data() + recv_blocks.displs[me], send.data() + send_blocks.displs[me],
          std::size_t(send_blocks.counts[me]) * sizeof(float), cudaMemcpyDefault, comm_stream()));
    peers_send.counts[me] = peers_recv.counts[me] = 0;  // done by the copy above
    // MPI reads device memory itself: the compute's writes (and that copy) must be done first.
    FSDP_CUDA_CHECK(cudaStreamSynchronize(comm_stream()));
    return mpi::all_to_all_v(mpi_comm(), send.data(), peers_send, recv.data(), peers_recv, where,
                             blocking);
  }
  // Every rank takes part in the host collective, even one whose blocks are all empty.
  const std::size_t in_floats = std::size_t(send_blocks.extent());
  const std::size_t out_floats = std::size_t(recv_blocks.extent());
  std::vector<cuda::PinnedLease> leases;
  leases.push_back(pool_->acquire(in_floats * sizeof(float)));
  leases.push_back(pool_->acquire(out_floats * sizeof(float)));
  float* in = leases[0].floats();
  float* out = leases[1].floats();
  if (in_floats > 0) stage_in(in, send.data(), in_floats);
  std::unique_ptr<detail::Pending> host;
  if (shm_)
    shm_->all_to_all_v(in, send_blocks, out, recv_blocks, where);
  else
    host = mpi::all_to_all_v(mpi_comm(), in, send_blocks, out, recv_blocks, where, blocking);
  std::vector<Span> spans;
  for (std::size_t p = 0; p < recv_blocks.counts.size(); ++p)
    spans.push_back({std::size_t(recv_blocks.displs[p]), std::size_t(recv_blocks.counts[p])});
  return stage_out(std::move(host), out, recv.data(), std::move(spans), std::move(leases),
                   blocking);
}

}  // namespace fsdp::comm
