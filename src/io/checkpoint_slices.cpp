// SPDX-License-Identifier: MIT
#include "io/checkpoint_slices.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace fsdp::ckpt_slices {
using ckpt::Part;
using h5::FlatRange;

ShardMap shard_map(MPI_Comm comm, const std::vector<UnitShard>& shards, bool writes) {
  int size = 1;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  const UnitShard& su = shards.front();
  const int mine[2] = {int(su.shard_begin / su.shard), writes ? 1 : 0};
  std::vector<int> all(2 * std::size_t(size));
  FSDP_MPI_CHECK(MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm));
  ShardMap m;
  for (int q = 0; q < size; ++q) {
    m.pos.push_back(all[2 * q]);
    m.writer.push_back(all[2 * q + 1]);
  }
  return m;
}

// The elements of tensor t (in its own flat coordinates) inside shard position `pos` of su.
FlatRange slice(const UnitShard& su, int pos, const TensorSpec& t) {
  const FlatRange r =
      h5::intersect({pos * su.shard, (pos + 1) * su.shard}, {t.offset, t.offset + t.numel});
  if (r.empty()) return {};
  return {r.begin - t.offset, r.end - t.offset};
}

// Each rank's part in hashing tensor t: writers their slice, replicas nothing.
std::vector<FlatRange> hash_ranges(const ShardMap& m, const UnitShard& su, const TensorSpec& t) {
  std::vector<FlatRange> r(m.pos.size());
  for (std::size_t q = 0; q < r.size(); ++q)
    if (m.writer[q]) r[q] = slice(su, m.pos[q], t);
  return r;
}

ShardVec part_shard(const UnitShard& su, Part p) {
  switch (p) {
    case Part::Params:
      return su.params;
    case Part::ExpAvg:
      return su.exp_avg;
    case Part::ExpAvgSq:
      return su.exp_avg_sq;
  }
  return {};
}

std::string dataset_path(Part p, const TensorSpec& t) {
  return std::string(ckpt::group_path(p)) + "/" + t.name;
}

std::vector<hsize_t> dims_of(const TensorSpec& t) {
  return std::vector<hsize_t>(t.shape.begin(), t.shape.end());
}

// The first block whose hash differs, as a message; "" when the tables agree.
std::string compare_tables(const std::vector<std::uint64_t>& stored,
                           const std::vector<std::uint64_t>& got, std::int64_t numel,
                           std::int64_t B) {
  for (std::size_t k = 0; k < got.size(); ++k)
    if (stored[k] != got[k]) {
      const std::int64_t a = std::int64_t(k) * B, b = std::min(a + B, numel) - 1;
      return "checksum mismatch in block " + std::to_string(k) + " of " +
             std::to_string(got.size()) + " (elements " + std::to_string(a) + ".." +
             std::to_string(b) + "): the data is damaged";
    }
  return {};
}


}  // namespace fsdp::ckpt_slices
