// SPDX-License-Identifier: MIT
// Checksums of a float array that is spread over MPI ranks and never held whole by one: the
// XXH3-64 hash of each fixed-size block of the row-major flattening (block boundaries depend
// only on the block size, never on the rank count), so any number of ranks gets the same table.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "io/h5_io.hpp"

namespace fsdp {

// 2^18 float32 elements = 1 MiB per block.
constexpr std::int64_t kChecksumBlockElems = std::int64_t(1) << 18;

// The block table of an n-element array. Rank q of comm holds elements ranges[q] (disjoint,
// together covering [0, n); any order; empty for ranks that hold nothing, e.g. replicas);
// `local` points at this rank's ranges[rank] elements. A block is hashed by the rank holding
// its first element, which receives the block's remaining elements (fewer than a block) from
// the ranks that hold them in one MPI_Alltoallv. Returns the full table on every rank.
// Collective over comm.
std::vector<std::uint64_t> block_hashes(MPI_Comm comm, const std::vector<h5::FlatRange>& ranges,
                                        const float* local, std::int64_t n,
                                        std::int64_t block_elems = kChecksumBlockElems);

// Hashes the blocks that start in r into table (sized for the whole array); data holds r's
// elements. r must end at a block boundary or at n (whole blocks only). No communication.
void hash_whole_blocks(const float* data, h5::FlatRange r, std::int64_t n, std::int64_t block_elems,
                       std::vector<std::uint64_t>& table);

// The dataset's one checksum: XXH3-64 of its block table (the uint64 values, little-endian),
// i.e. a hash of the full contents in row-major order.
std::uint64_t table_hash(const std::vector<std::uint64_t>& blocks);

}  // namespace fsdp
