// SPDX-License-Identifier: MIT
// How a checkpoint's datasets are cut between the ranks, shared by its writer
// (io/checkpoint.cpp) and reader (io/checkpoint_read.cpp): each rank's shard position, which
// copy of a replicated shard writes, a tensor's slice inside a shard, and the block-hash
// comparison's message.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/h5_io.hpp"

namespace fsdp::ckpt_slices {

// Where every rank's shards lie, per placement (UnitShard::placement) and rank: its position in
// the placement's shard group (a part's shard is flat elements [pos * shard, (pos + 1) * shard))
// and whether it is the copy that writes and hashes.
struct ShardMap {
  std::vector<std::vector<int>> pos;
  std::vector<std::vector<int>> writer;
  int pos_of(const UnitShard& su, int rank) const {
    return pos[std::size_t(su.placement)][std::size_t(rank)];
  }
  bool writes(const UnitShard& su, int rank) const {
    return writer[std::size_t(su.placement)][std::size_t(rank)] != 0;
  }
};
ShardMap shard_map(MPI_Comm comm, const std::vector<UnitShard>& shards);
// The elements of tensor t (in its own flat coordinates) inside shard position `pos` of su.
h5::FlatRange slice(const UnitShard& su, int pos, const TensorSpec& t);
// Each rank's part in hashing tensor t: writers their slice, replicas nothing.
std::vector<h5::FlatRange> hash_ranges(const ShardMap& m, const UnitShard& su, const TensorSpec& t);
ShardVec part_shard(const UnitShard& su, ckpt::Part p);
// Whether the file holds part p of su's tensor i (ckpt::stores, by the run's optimizer state).
bool stores(ckpt::Part p, const UnitShard& su, std::size_t i);
// Where slice `mine` of su's tensor i starts in part_shard(su, p).
std::int64_t local_at(ckpt::Part p, const UnitShard& su, std::size_t i, const h5::FlatRange& mine);
std::string dataset_path(ckpt::Part p, const TensorSpec& t);
std::vector<hsize_t> dims_of(const TensorSpec& t);
// The first block whose hash differs, as a message; "" when the tables agree.
std::string compare_tables(const std::vector<std::uint64_t>& stored,
                           const std::vector<std::uint64_t>& got, std::int64_t numel,
                           std::int64_t B);

}  // namespace fsdp::ckpt_slices
