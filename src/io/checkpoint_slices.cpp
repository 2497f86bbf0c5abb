// SPDX-License-Identifier: MIT
#include "io/checkpoint_slices.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace fsdp::ckpt_slices {
using ckpt::Part;
using h5::FlatRange;

ShardMap shard_map(MPI_Comm comm, const std::vector<UnitShard>& shards) {
  int size = 1;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  int P = 0;  // the same units, so the same placements, on every rank
  for (const UnitShard& su : shards) P = std::max(P, su.placement + 1);
  std::vector<int> mine(2 * std::size_t(P), 0);
  for (const UnitShard& su : shards) {
    mine[2 * std::size_t(su.placement)] = su.shard > 0 ? int(su.shard_begin / su.shard) : 0;
    mine[2 * std::size_t(su.placement) + 1] = su.writes ? 1 : 0;
  }
  std::vector<int> all(2 * std::size_t(P) * std::size_t(size));
  FSDP_MPI_CHECK(
      MPI_Allgather(mine.data(), 2 * P, MPI_INT, all.data(), 2 * P, MPI_INT, comm));
  ShardMap m;
  m.pos.assign(std::size_t(P), std::vector<int>(std::size_t(size)));
  m.writer = m.pos;
  for (int q = 0; q < size; ++q)
    for (int p = 0; p < P; ++p) {
      m.pos[std::size_t(p)][std::size_t(q)] = all[std::size_t(2 * (q * P + p))];
      m.writer[std::size_t(p)][std::size_t(q)] = all[std::size_t(2 * (q * P + p) + 1)];
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
  const std::vector<int>& pos = m.pos[std::size_t(su.placement)];
  const std::vector<int>& writer = m.writer[std::size_t(su.placement)];
  std::vector<FlatRange> r(pos.size());
  for (std::size_t q = 0; q < r.size(); ++q)
    if (writer[q]) r[q] = slice(su, pos[q], t);
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
    case Part::Momentum:  // Muon's momentum sits where AdamW's first moment would
      return su.exp_avg;
  }
  return {};
}

bool stores(Part p, const UnitShard& su, std::size_t i) {
  return ckpt::stores(p, su.layout->tensors[i], su.muon ? OptimizerKind::Muon : OptimizerKind::AdamW);
}

std::int64_t local_at(Part p, const UnitShard& su, std::size_t i, const FlatRange& mine) {
  const std::int64_t at = su.layout->tensors[i].offset + mine.begin - su.shard_begin;
  return p == Part::ExpAvgSq && i < su.sq_shift.size() ? at - su.sq_shift[i] : at;
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
