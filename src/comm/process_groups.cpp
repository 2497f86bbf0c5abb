// SPDX-License-Identifier: MIT
#include "comm/process_groups.hpp"

#include "comm/owned_comm.hpp"
#include "comm/single_communicator.hpp"
#include "core/check.hpp"

namespace fsdp::comm {
namespace {

// MPI_Comm_split's result, wrapped by the backend (which takes its own duplicate) and freed.
std::unique_ptr<Communicator> split(MPI_Comm world, int color, int key, MpiOptions options) {
  MPI_Comm raw = MPI_COMM_NULL;
  FSDP_MPI_CHECK(MPI_Comm_split(world, color, key, &raw));
  const OwnedComm part = OwnedComm::adopt(raw);
  return make_communicator(part.get(), std::move(options));
}

}  // namespace

std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, MpiOptions options) {
  int n = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &n));
  if (n == 1) return std::make_unique<SingleCommunicator>(options.name, options.link);
  return std::make_unique<MpiCommunicator>(comm, std::move(options));
}

void make_expert_groups(ProcessGroups& g, MPI_Comm world, int P, int S, bool slices, MpiOptions base) {
  int rank = 0, n = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(world, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(world, &n));
  if (P < 1 || S < 1 || n % S != 0 || S % P != 0)
    fatal("comm::make_expert_groups: expert groups of " + std::to_string(P) + " ranks in shard groups of " +
          std::to_string(S) + " in a world of " + std::to_string(n));
  MpiOptions o = base;
  o.name = "expert";
  g.expert = split(world, rank / P, rank, o);
  if (!slices) return;
  o.name = "expert slice";
  g.expert_slice = split(world, (rank / S) * P + (rank % S) % P, rank, o);
}

int ranks_per_node(MPI_Comm comm) {
  MPI_Comm raw = MPI_COMM_NULL;
  FSDP_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &raw));
  const OwnedComm node = OwnedComm::adopt(raw);
  int local = 0, least = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(node.get(), &local));
  FSDP_MPI_CHECK(MPI_Allreduce(&local, &least, 1, MPI_INT, MPI_MIN, comm));
  return least;
}

ProcessGroups make_process_groups(MPI_Comm world, int shard_group_size, LinkEmulation link,
                                  MpiOptions base, const std::vector<int>& splits) {
  int rank = 0, n = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(world, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(world, &n));
  const int s = shard_group_size == 0 ? n : shard_group_size;
  if (s < 0 || n % s != 0)
    fatal("comm::make_process_groups: shard group size " + std::to_string(shard_group_size) +
          " does not divide the world size " + std::to_string(n) +
          " (use a divisor of it, or 0 for the whole world)");
  base.link = link;
  auto named = [&](const char* name) {
    MpiOptions o = base;
    o.name = name;
    return o;
  };
  ProcessGroups g;
  g.ranks_per_node = ranks_per_node(world);
  g.world = make_communicator(world, named("world"));
  g.shard = split(world, rank / s, rank, named("shard"));
  g.replicate = split(world, rank % s, rank, named("replicate"));
  for (int k : splits) {
    if (k <= 1 || g.splits.count(k)) continue;
    if (s % k != 0) fatal("comm::make_process_groups: a part split " + std::to_string(k) +
                          " of shard groups of " + std::to_string(s) + " ranks");
    const auto [shard_color, replicate_color] = split_colors(rank, s, k);
    SplitGroups& sg = g.splits[k];
    sg.shard = split(world, shard_color, rank, named("part shard"));
    sg.replicate = split(world, replicate_color, rank, named("part replicate"));
  }
  return g;
}

}  // namespace fsdp::comm
