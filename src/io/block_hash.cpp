// SPDX-License-Identifier: MIT
#include "io/block_hash.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
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
                 std::int64_t B, std::uint64_t* table) {
  const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                       XXH3_freeState);
  if (!state) throw std::bad_alloc();
  XXH3_state_t* st = state.get();
  for (std::int64_t k = (mine.begin + B - 1) / B; k * B < mine.end; ++k) {
    const std::int64_t b0 = k * B, b1 = std::min(b0 + B, n), here = std::min(b1, mine.end);
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, local + (b0 - mine.begin), std::size_t(here - b0) * sizeof(float));
    if (b1 > here) XXH3_64bits_update(st, tail, std::size_t(b1 - here) * sizeof(float));
    table[k] = XXH3_64bits_digest(st);
  }
}

}  // namespace

void hash_whole_blocks(const float* data, FlatRange r, std::int64_t n, std::int64_t block_elems,
                       std::vector<std::uint64_t>& table) {
  if (r.end != n && r.end % block_elems != 0)
    throw std::logic_error("hash_whole_blocks: the range ends inside a block");
  hash_blocks(data, r, nullptr, n, block_elems, table.data());
}

std::vector<std::vector<std::uint64_t>> block_hashes(MPI_Comm comm,
                                                     const std::vector<DistributedArray>& arrays,
                                                     std::int64_t B) {
  int rank = 0, size = 1;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  for (const DistributedArray& a : arrays) {
    std::int64_t covered = 0;
    for (const FlatRange& r : a.ranges) covered += r.size();
    if (int(a.ranges.size()) != size || covered != a.n)
      throw std::logic_error("block_hashes: the ranks' ranges do not cover the array once");
  }
  // What goes to each rank, ordered by rank and then by array, on both sides. Every count is
  // below one block per array, so int counts hold for any sane number of arrays per call.
  std::vector<int> scount(size, 0), sdispl(size, 0), rcount(size, 0), rdispl(size, 0);
  std::vector<float> send, recv;
  std::vector<FlatRange> need(arrays.size());
  for (std::size_t i = 0; i < arrays.size(); ++i)
    need[i] = tail_needed(arrays[i].ranges[rank], arrays[i].n, B);
  for (int q = 0; q < size; ++q) {
    sdispl[q] = int(send.size());
    rdispl[q] = int(recv.size());
    if (q == rank) continue;
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const DistributedArray& a = arrays[i];
      const FlatRange mine = a.ranges[rank];
      const FlatRange give = h5::intersect(tail_needed(a.ranges[q], a.n, B), mine);
      if (!give.empty())
        send.insert(send.end(), a.local + (give.begin - mine.begin),
                    a.local + (give.end - mine.begin));
      recv.resize(recv.size() + std::size_t(h5::intersect(need[i], a.ranges[q]).size()));
    }
    scount[q] = int(send.size()) - sdispl[q];
    rcount[q] = int(recv.size()) - rdispl[q];
  }
  if (size > 1)
    FSDP_MPI_CHECK(MPI_Alltoallv(send.data(), scount.data(), sdispl.data(), MPI_FLOAT, recv.data(),
                                 rcount.data(), rdispl.data(), MPI_FLOAT, comm));

  // Each array's tail, reassembled in element order from the pieces the ranks sent.
  std::vector<std::vector<float>> tails(arrays.size());
  for (std::size_t i = 0; i < arrays.size(); ++i) tails[i].resize(std::size_t(need[i].size()));
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    const float* from = recv.data() + rdispl[q];
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const FlatRange take = h5::intersect(need[i], arrays[i].ranges[q]);
      if (take.empty()) continue;
      std::memcpy(tails[i].data() + (take.begin - need[i].begin), from,
                  std::size_t(take.size()) * sizeof(float));
      from += take.size();
    }
  }
  std::vector<std::uint64_t> flat;  // every table back to back, for one all-reduce
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const DistributedArray& a = arrays[i];
    const std::size_t base = flat.size();
    flat.resize(base + std::size_t((a.n + B - 1) / B), 0);
    hash_blocks(a.local, a.ranges[rank], tails[i].data(), a.n, B, flat.data() + base);
  }
  // Exactly one rank filled each entry; the others contribute zeros.
  if (size > 1 && !flat.empty())
    FSDP_MPI_CHECK(
        MPI_Allreduce(MPI_IN_PLACE, flat.data(), int(flat.size()), MPI_UINT64_T, MPI_BOR, comm));
  std::vector<std::vector<std::uint64_t>> tables(arrays.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const std::size_t nb = std::size_t((arrays[i].n + B - 1) / B);
    tables[i].assign(flat.begin() + std::ptrdiff_t(at), flat.begin() + std::ptrdiff_t(at + nb));
    at += nb;
  }
  return tables;
}

std::uint64_t table_hash(const std::vector<std::uint64_t>& blocks) {
  return XXH3_64bits(blocks.data(), blocks.size() * sizeof(std::uint64_t));
}

}  // namespace fsdp
