// SPDX-License-Identifier: MIT
// The world split for sharding: shard groups (ranks that together hold one copy of the model)
// and replicate groups (ranks holding the same shard). Plain FSDP: shard group = world.
#pragma once
#include <mpi.h>

#include <memory>

#include "comm/communicator.hpp"
#include "comm/mpi_communicator.hpp"

namespace fsdp::comm {

struct ProcessGroups {
  std::unique_ptr<Communicator> world, shard, replicate;
  int ranks_per_node = 1;
};

// Ranks r with the same r / shard_group_size form a shard group (consecutive ranks: one node
// under block placement); ranks with the same r % shard_group_size form a replicate group.
// shard_group_size 0 means the world. A size that does not divide the world is fatal. Groups of
// one rank get a SingleCommunicator. `base` supplies the window and shared-memory settings.
ProcessGroups make_process_groups(MPI_Comm world, int shard_group_size, LinkEmulation link = {},
                                  MpiOptions base = {});

// An MpiCommunicator over a duplicate of comm, or a SingleCommunicator when comm has one rank.
std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, MpiOptions options = {});

// Ranks sharing this node's memory (MPI_COMM_TYPE_SHARED), the minimum over all nodes so every
// rank gets the same answer: hybrid sharding's default shard-group size.
int ranks_per_node(MPI_Comm comm);

}  // namespace fsdp::comm
