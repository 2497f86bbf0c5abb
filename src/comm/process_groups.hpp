// SPDX-License-Identifier: MIT
// The world split for sharding: shard groups (ranks that together hold one copy of the model)
// and replicate groups (ranks holding the same shard). Plain FSDP: shard group = world. The
// mesh's other parts (model/placement.hpp) shard over 1/k of a shard group: their groups too.
#pragma once
#include <mpi.h>

#include <map>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mpi_communicator.hpp"

namespace fsdp::comm {

// The groups of a part sharded over 1/k of the shard group: consecutive positions of it (its
// shard group), and the ranks at the same position of every slice of every shard group (its
// replicate group, in world-rank order).
struct SplitGroups {
  std::unique_ptr<Communicator> shard, replicate;
};

struct ProcessGroups {
  std::unique_ptr<Communicator> world, shard, replicate;
  int ranks_per_node = 1;
  std::map<int, SplitGroups> splits;  // by k > 1
  // fsdp.expert_parallel = P > 1: the P consecutive ranks (of one shard group) that share a
  // layer's experts and exchange tokens (null: no expert parallelism).
  std::unique_ptr<Communicator> expert;
  // Where the experts' part is divided (model/placement.hpp): the S / P ranks of a shard group
  // at positions q with the same q % P, which gather, reduce and store one slice of it.
  std::unique_ptr<Communicator> expert_slice;
  Communicator& part_shard(int k) { return k <= 1 ? *shard : *splits.at(k).shard; }
  Communicator& part_replicate(int k) { return k <= 1 ? *replicate : *splits.at(k).replicate; }
};

// The world ranks' colours for a part split k of shard groups of s ranks: {shard, replicate}.
inline std::pair<int, int> split_colors(int rank, int s, int k) {
  const int sp = s / k;
  return {rank / sp, (rank % s) % sp};
}

// Ranks r with the same r / shard_group_size form a shard group (consecutive ranks: one node
// under block placement); ranks with the same r % shard_group_size form a replicate group.
// shard_group_size 0 means the world. A size that does not divide the world is fatal. Groups of
// one rank get a SingleCommunicator. `base` supplies the window and shared-memory settings.
// splits: the k > 1 (dividing the shard group) whose SplitGroups to make too.
ProcessGroups make_process_groups(MPI_Comm world, int shard_group_size, LinkEmulation link = {},
                                  MpiOptions base = {}, const std::vector<int>& splits = {});

// The expert groups of fsdp.expert_parallel = P: ranks r with the same r / P, and with
// `slices` the slice groups of shard groups of S ranks (the same r / S and r % P) too.
// Collective over world.
void make_expert_groups(ProcessGroups& g, MPI_Comm world, int P, int S, bool slices, MpiOptions base = {});

// An MpiCommunicator over a duplicate of comm, or a SingleCommunicator when comm has one rank.
std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, MpiOptions options = {});

// Ranks sharing this node's memory (MPI_COMM_TYPE_SHARED), the minimum over all nodes so every
// rank gets the same answer: hybrid sharding's default shard-group size.
int ranks_per_node(MPI_Comm comm);

}  // namespace fsdp::comm
