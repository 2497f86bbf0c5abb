// SPDX-License-Identifier: MIT
// What the NCCL and the MPI device communicators share: a private duplicate of the group's MPI
// communicator, a communication stream ordered after the compute stream by events (never by a
// device-wide sync), and a completion event per collective that the compute stream can wait on.
#pragma once
#include <cuda_runtime.h>
#include <mpi.h>

#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/cuda/cuda_resources.hpp"
#include "comm/owned_comm.hpp"

namespace fsdp::comm {

// Views handed to a device communicator hold device pointers (raw cudaMalloc memory wrapped in
// unmanaged Views also works with a host-only Kokkos: nothing here dereferences them on the host).
// Handles must not outlive the communicator that issued them.
class DeviceCommunicator : public Communicator {
 public:
  // Collective over comm. Uses the current CUDA device. compute: the stream that produces and
  // consumes the buffers (nullptr: the legacy default stream).
  DeviceCommunicator(MPI_Comm comm, std::string name, LinkEmulation link, cudaStream_t compute);
  ~DeviceCommunicator() override;

  cudaStream_t compute_stream() const { return compute_; }
  void set_compute_stream(cudaStream_t s) { compute_ = s; }
  cudaStream_t comm_stream() const { return stream_.get(); }
  int device() const { return device_; }
  MPI_Comm mpi_comm() const { return comm_.get(); }

  // The compute stream waits, on the device, for every collective issued so far whose device
  // work is queued; the host goes on. Use it instead of Handle::wait() when only kernels consume
  // the result. (On the staged MPI path, a non-blocking collective queues its copy back only
  // once its MPI part is done: test or wait on its handle first.)
  void compute_waits_for_comm();
  void barrier() override;

 protected:
  // Every collective starts with this: the comm stream waits for the compute stream's work so
  // far (an event recorded on compute, cudaStreamWaitEvent on comm).
  void comm_after_compute();
  // So the base class does not fence the host: comm_after_compute() orders every collective.
  void order_after_compute() override {}
  // Records the completion of everything enqueued on the comm stream so far.
  std::shared_ptr<cuda::Event> record_done();
  // What a collective returns once its device work is enqueued: nullptr after waiting when
  // blocking, else a pending op that polls (test) or waits on the completion event.
  std::unique_ptr<detail::Pending> finish(bool blocking);
  void all_gather_bytes(const void* send, void* recv, std::size_t bytes) override;
  void all_to_all_bytes(const void* send, void* recv, std::size_t bytes) override;

 private:
  OwnedComm comm_;
  int device_ = -1;
  cudaStream_t compute_ = nullptr;
  cuda::Stream stream_;
  cuda::Event ready_;
  std::shared_ptr<cuda::Event> last_done_;
};

}  // namespace fsdp::comm
