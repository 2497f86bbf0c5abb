// SPDX-License-Identifier: MIT
// The device mesh fsdp-train runs on, its groups made the way comm.backend asks. A GPU build
// (FSDP_ENABLE_CUDA) gives each group a device communicator (NCCL, or MPI on device buffers)
// through make_device_communicator; a CPU build plans the same decision with "no GPU" facts
// and gives every group the host communicator. Either way each group's path is one log line.
#pragma once
#include <mpi.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "comm/device_mesh.hpp"
#include "comm/mpi_communicator.hpp"

namespace fsdp::comm {

// comm.backend asks for what this build or these GPUs cannot do; every rank throws the same.
struct BackendError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Collective over world: the mesh of `shape` with the `extra` groups (DeviceMesh).
DeviceMesh make_training_mesh(MPI_Comm world, const MeshShape& shape,
                              const std::vector<MeshGroup>& extra, const std::string& backend,
                              LinkEmulation link, const MpiOptions& mpi);

// The CPU build's plan for one group of `size` ranks: its log line, or BackendError when
// comm.backend cannot be honoured on host memory.
std::string plan_host_group(const std::string& backend, const std::string& name, int size);

// Whether a group's path is logged: the world, shard and replicate groups always, the others
// (context, tensor, experts, a part's groups) where they have more than one rank.
bool logs_path(const MeshGroup& g, int size);

}  // namespace fsdp::comm
