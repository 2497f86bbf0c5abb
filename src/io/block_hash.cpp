// SPDX-License-Identifier: MIT
#include "io/block_hash.hpp"

#include <xxhash.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/check.hpp"

// The hashes are of the bytes as they lie in the file (IEEE little-endian); in memory on a
// big-endian host they would differ.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "checksums assume a little-endian host");

namespace fsdp {
namespace {

using h5::FlatRange;

// Elements a rank holding `mine` needs from others: the rest of the block that starts in
// `mine` and runs past its end (at most one such block).
FlatRange tail_needed(FlatRange mine, std::int64_t n, std::int64_t B) {
  if (mine.empty()) return {};
  const std::int64_t start = (mine.end - 1) / B * B;
  const std::int64_t end = std::min(start + B, n);
  if (start < mine.begin || end <= mine.end) return {};
  return {mine.end, end};
}

// Hashes every block that starts in `mine`; the one running past mine.end continues in tail.
void hash_blocks(const float* local, FlatRange mine, const float* tail, std::int64_t n,
                 std::int64_t B, std::vector<std::uint64_t>& table) {
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                       XXH3_freeState);
  if (!state) throw std::bad_alloc();
  XXH3_state_t* st = state.get();
  for (std::int64_t k = (mine.begin + B - 1) / B; k * B < mine.end; ++k) {
    const std::int64_t b0 = k * B, b1 = std::min(b0 + B, n), here = std::min(b1, mine.end);
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, local + (b0 - mine.begin), std::size_t(here - b0) * sizeof(float));
    if (b1 > here) XXH3_64bits_update(st, tail, std::size_t(b1 - here) * sizeof(float));
    table[std::size_t(k)] = XXH3_64bits_digest(st);
  }
}

}  // namespace

void hash_whole_blocks(const float* data, FlatRange r, std::int64_t n, std::int64_t block_elems,
                       std::vector<std::uint64_t>& table) {
  if (r.end != n && r.end % block_elems != 0)
    throw std::logic_error("hash_whole_blocks: the range ends inside a block");
  hash_blocks(data, r, nullptr, n, block_elems, table);
}

std::vector<std::uint64_t> block_hashes(MPI_Comm comm, const std::vector<FlatRange>& ranges,
                                        const float* local, std::int64_t n,
                                        std::int64_t block_elems) {
  int rank = 0, size = 1;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  const std::int64_t B = block_elems;
  std::int64_t covered = 0;
  for (const FlatRange& r : ranges) covered += r.size();
  if (int(ranges.size()) != size || covered != n)
    throw std::logic_error("block_hashes: the ranks' ranges do not cover the array once");
  const FlatRange mine = ranges[std::size_t(rank)];
  const FlatRange need = tail_needed(mine, n, B);

  // Counts are below one block (int is enough); each rank's pieces land in rank order.
  std::vector<int> scount(size, 0), sdispl(size, 0), rcount(size, 0), rdispl(size, 0);
  for (int q = 0; q < size; ++q) {
    const FlatRange give = h5::intersect(tail_needed(ranges[q], n, B), mine);
    if (q != rank && !give.empty()) {
      scount[q] = int(give.size());
      sdispl[q] = int(give.begin - mine.begin);
    }
    const FlatRange take = h5::intersect(need, ranges[q]);
    if (q != rank && !take.empty()) {
      rcount[q] = int(take.size());
      rdispl[q] = int(take.begin - need.begin);
    }
  }
  std::vector<float> tail(std::size_t(std::max<std::int64_t>(need.size(), 1)));
  if (size > 1)
    FSDP_MPI_CHECK(MPI_Alltoallv(local, scount.data(), sdispl.data(), MPI_FLOAT, tail.data(),
                                 rcount.data(), rdispl.data(), MPI_FLOAT, comm));

  const std::int64_t nblocks = (n + B - 1) / B;
  std::vector<std::uint64_t> table(std::size_t(nblocks), 0);
  hash_blocks(local, mine, tail.data(), n, B, table);
  // Exactly one rank filled each entry; the others contribute zeros.
  if (size > 1 && nblocks > 0)
    FSDP_MPI_CHECK(
        MPI_Allreduce(MPI_IN_PLACE, table.data(), int(nblocks), MPI_UINT64_T, MPI_BOR, comm));
  return table;
}

std::uint64_t table_hash(const std::vector<std::uint64_t>& blocks) {
  return XXH3_64bits(blocks.data(), blocks.size() * sizeof(std::uint64_t));
}

}  // namespace fsdp
