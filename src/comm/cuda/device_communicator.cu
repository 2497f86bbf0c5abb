// SPDX-License-Identifier: MIT
#include <climits>

#include "comm/cuda/cuda_check.hpp"
#include "comm/cuda/device_communicator.hpp"
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

// A collective whose device work is enqueued on a stream: done when its event has fired.
class EventPending final : public detail::Pending {
 public:
  explicit EventPending(std::shared_ptr<cuda::Event> done) : done_(std::move(done)) {}
  bool test() override { return done_->query(); }
  void wait() override { done_->synchronize(); }

 private:
  std::shared_ptr<cuda::Event> done_;
};

int current_device() {
  int d = -1;
  FSDP_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

}  // namespace

DeviceCommunicator::DeviceCommunicator(MPI_Comm comm, std::string name, LinkEmulation link,
                                       cudaStream_t compute)
    : Communicator(rank_of(comm), size_of(comm), std::move(name), link),
      comm_(OwnedComm::dup(comm)),
      device_(current_device()),
      compute_(compute) {}

DeviceCommunicator::~DeviceCommunicator() {
  // Collectives still queued must finish before the stream and their buffers go away.
  FSDP_CUDA_WARN(cudaStreamSynchronize(stream_.get()));
}

void DeviceCommunicator::comm_after_compute() {
  ready_.record(compute_);
  FSDP_CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), ready_.get(), 0));
}

std::shared_ptr<cuda::Event> DeviceCommunicator::record_done() {
  auto done = std::make_shared<cuda::Event>();
  done->record(stream_.get());
  last_done_ = done;
  return done;
}

std::unique_ptr<detail::Pending> DeviceCommunicator::finish(bool blocking) {
  auto done = record_done();
  if (blocking) {
    done->synchronize();
    return nullptr;
  }
  return std::make_unique<EventPending>(std::move(done));
}

void DeviceCommunicator::compute_waits_for_comm() {
  if (last_done_) FSDP_CUDA_CHECK(cudaStreamWaitEvent(compute_, last_done_->get(), 0));
}

void DeviceCommunicator::barrier() { FSDP_MPI_CHECK(MPI_Barrier(comm_.get())); }

void DeviceCommunicator::all_gather_bytes(const void* send, void* recv, std::size_t bytes) {
  // The scalar helpers' values live on the host: plain MPI, whatever moves the big buffers.
  if (bytes > std::size_t(INT_MAX)) fatal("comm::all_reduce (scalars): too many bytes for MPI");
  FSDP_MPI_CHECK(
      MPI_Allgather(send, int(bytes), MPI_BYTE, recv, int(bytes), MPI_BYTE, comm_.get()));
}

void DeviceCommunicator::all_to_all_bytes(const void* send, void* recv, std::size_t bytes) {
  // Counts for all_to_all_v live on the host, like the scalars.
  if (bytes > std::size_t(INT_MAX)) fatal("comm::exchange_counts: too many bytes for MPI");
  FSDP_MPI_CHECK(MPI_Alltoall(send, int(bytes), MPI_BYTE, recv, int(bytes), MPI_BYTE, comm_.get()));
}

}  // namespace fsdp::comm
