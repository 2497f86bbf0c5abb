// SPDX-License-Identifier: MIT
// comm.backend = auto | nccl | mpi: which path each process group's collectives take, decided
// from facts every rank of the group agrees on, with one line for the log saying which path and
// why. The decision alone (no MPI, no CUDA), in every build: a CPU build plans its groups with
// it too (no GPU: host memory), so the same deck gets the same answer and the same errors.
#pragma once
#include <optional>
#include <string>

namespace fsdp::comm {

enum class DeviceBackend { Auto, Nccl, Mpi };
std::optional<DeviceBackend> parse_device_backend(const std::string& s);  // exact, lower case
const char* to_string(DeviceBackend b);

enum class DevicePath {
  Nccl,          // "nccl": NcclCommunicator
  MpiStaged,     // "mpi (host staging)": StagedCommunicator, device <-> pinned host copies
  MpiCudaAware,  // "mpi (CUDA-aware)": StagedCommunicator passing device pointers where it can
  Host,          // "mpi (host memory)": no GPU, or a CPU build: the buffers already are host
                 // memory, so the host communicator (make_communicator) runs on them
};
const char* label(DevicePath p);

// What the ranks of one group found, combined over the group: the same on every rank.
struct GroupFacts {
  std::string name = "world";
  int size = 1;
  int ranks_with_gpu = 0;            // ranks that see at least one CUDA device
  int shared_a = -1, shared_b = -1;  // two ranks whose current GPU is the same; -1: none
  bool mpi_cuda_aware = false;       // on every rank
  std::string no_gpu_reason;         // why this rank has none ("cudaGetDeviceCount: ...")
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

// What a build whose compute runs on the CPU knows of a group: no GPU holds its buffers.
GroupFacts host_group_facts(const std::string& name, int size);

}  // namespace fsdp::comm
