// SPDX-License-Identifier: MIT
// comm.backend = auto | nccl | mpi for device buffers: which communicator each process group
// gets, decided from facts every rank of the group agrees on, with a line for the log saying
// which path the group uses and why. The trainer reaches the GPU communicators only through here.
#pragma once
#include <cuda_runtime.h>
#include <mpi.h>

#include <memory>
#include <optional>
#include <string>

#include "comm/communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/process_groups.hpp"

namespace fsdp::comm {

enum class DeviceBackend { Auto, Nccl, Mpi };
std::optional<DeviceBackend> parse_device_backend(const std::string& s);  // exact, lower case
const char* to_string(DeviceBackend b);

enum class DevicePath {
  Nccl,          // "nccl": NcclCommunicator
  MpiStaged,     // "mpi (host staging)": StagedCommunicator, device <-> pinned host copies
  MpiCudaAware,  // "mpi (CUDA-aware)": StagedCommunicator passing device pointers where it can
  Host,          // "mpi (host staging)" with no GPU: the buffers already are host memory, so
                 // the host communicator (make_communicator) runs on them, nothing to copy
};
const char* label(DevicePath p);

// What the ranks of one group found, combined over the group: the same on every rank.
struct GroupFacts {
  std::string name = "world";
  int size = 1;
  int ranks_with_gpu = 0;            // ranks that see at least one CUDA device
  int shared_a = -1, shared_b = -1;  // two ranks whose current GPU is the same; -1: none
  bool mpi_cuda_aware = false;       // on every rank
  std::string no_gpu_reason;         // this rank's cudaGetDeviceCount answer when it has none
};

struct DevicePlan {
  DevicePath path = DevicePath::Host;
  std::string description;  // "<group> (<n> ranks): <label>: <why>"
  std::string error;        // non-empty: the request cannot be met (fatal on every rank)
};

// The decision alone (no MPI, no CUDA), so it is tested without a GPU:
//   no rank has a GPU   -> Host (nccl requested: error)
//   some ranks have one -> error, whatever was requested
//   auto                -> Nccl if every rank has its own GPU, else MPI (ranks share a GPU)
//   nccl                -> Nccl; error if ranks share a GPU (NCCL needs one GPU per rank)
//   mpi                 -> MPI
// MPI means MpiCudaAware when MPI is CUDA-aware on every rank, else MpiStaged.
DevicePlan plan_device_path(DeviceBackend requested, const GroupFacts& facts);

// Collective over comm: what plan_device_path needs (devices seen, the current device's UUID
// on every rank, CUDA-awareness of MPI).
GroupFacts gather_group_facts(MPI_Comm comm, const std::string& name);

struct DeviceCommOptions {
  std::string name = "world";             // the group, as in the log
  cudaStream_t compute_stream = nullptr;  // the stream that produces and consumes the buffers
  MpiOptions mpi;                         // shared-memory settings of the MPI paths
};

// Collective over comm. backend: "auto", "nccl" or "mpi" (anything else is fatal). Uses each
// rank's current CUDA device (see bind_local_device). description: one line for the log.
std::unique_ptr<Communicator> make_device_communicator(MPI_Comm comm, const std::string& backend,
                                                       LinkEmulation link, std::string& description,
                                                       const DeviceCommOptions& options = {});

// make_process_groups (process_groups.hpp) for device buffers: every group chooses its path
// as above; description gets one line per group (world, shard, replicate).
ProcessGroups make_device_process_groups(MPI_Comm world, int shard_group_size,
                                         const std::string& backend, LinkEmulation link,
                                         std::string& description,
                                         const DeviceCommOptions& options = {});

// Collective over comm: makes GPU (node-local rank mod GPUs on this rank) current and returns
// it; -1 when this rank sees no GPU.
int bind_local_device(MPI_Comm comm);

// CUDA devices this rank sees; 0 (with cudaGetDeviceCount's message in *reason) when it fails.
int visible_devices(std::string* reason = nullptr);

}  // namespace fsdp::comm
