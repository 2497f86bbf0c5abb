// SPDX-License-Identifier: MIT
// The host communicator of one group of ranks, and the node size. The groups themselves are
// the device mesh's (comm/device_mesh.hpp), which makes each of them once.
#pragma once
#include <mpi.h>

#include <memory>

#include "comm/communicator.hpp"
#include "comm/mpi_communicator.hpp"

namespace fsdp::comm {

// An MpiCommunicator over a duplicate of comm, or a SingleCommunicator when comm has one rank.
std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, MpiOptions options = {});

// Ranks sharing this node's memory (MPI_COMM_TYPE_SHARED), the minimum over all nodes so every
// rank gets the same answer: hybrid sharding's default shard-group size.
int ranks_per_node(MPI_Comm comm);

}  // namespace fsdp::comm
