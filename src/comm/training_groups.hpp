// SPDX-License-Identifier: MIT
// The process groups fsdp-train runs on, built the way comm.backend asks. A GPU build
// (FSDP_ENABLE_CUDA) gives every group a device communicator (NCCL, or MPI on device buffers)
// through make_device_process_groups; a CPU build plans the same decision with "no GPU" facts
// and gives every group the host communicator. Either way each group's path is one log line.
#pragma once
#include <mpi.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "comm/mpi_communicator.hpp"
#include "comm/process_groups.hpp"

namespace fsdp::comm {

// comm.backend asks for what this build or these GPUs cannot do; every rank throws the same.
struct BackendError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TrainingGroups {
  ProcessGroups groups;
  std::vector<std::string> paths;  // world, shard, replicate: "<group> (<n> ranks): <path>: <why>"
};

// Collective over world. shard_group_size and splits as in make_process_groups.
TrainingGroups make_training_groups(MPI_Comm world, int shard_group_size,
                                    const std::string& backend, LinkEmulation link,
                                    const MpiOptions& mpi, const std::vector<int>& splits = {});

// The CPU build's plans for the three groups, in that order (no MPI): BackendError when
// comm.backend cannot be honoured on host memory.
std::vector<std::string> plan_host_groups(const std::string& backend, int world_size,
                                          int shard_group_size);

}  // namespace fsdp::comm
