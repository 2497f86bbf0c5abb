// SPDX-License-Identifier: MIT
// comm.backend = auto | nccl | mpi for device buffers: the facts each group gathers (GPUs, their
// UUIDs, CUDA-aware MPI) and the communicator its plan (comm/backend_plan.hpp) names. The
// trainer reaches the GPU communicators only through here (comm/training_groups.hpp makes the
// device mesh's groups with make_device_communicator).
#pragma once
#include <cuda_runtime.h>
#include <mpi.h>

#include <memory>
#include <optional>
#include <string>

#include "comm/backend_plan.hpp"
#include "comm/communicator.hpp"
#include "comm/mpi_communicator.hpp"

namespace fsdp::comm {

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

// Collective over comm: makes GPU (node-local rank mod GPUs on this rank) current and returns
// it; -1 when this rank sees no GPU.
int bind_local_device(MPI_Comm comm);

// CUDA devices this rank sees; 0 (with cudaGetDeviceCount's message in *reason) when it fails.
int visible_devices(std::string* reason = nullptr);

}  // namespace fsdp::comm
