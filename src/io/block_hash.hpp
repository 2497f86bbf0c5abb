// SPDX-License-Identifier: MIT
// Checksums of float arrays that are spread over MPI ranks and never held whole by one: the
// XXH3-64 hash of each fixed-size block of an array's row-major flattening (block boundaries
// depend only on the block size, never on the rank count), so any number of ranks gets the
// same table.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "io/h5_io.hpp"

namespace fsdp {

// 2^18 float32 elements = 1 MiB per block.
constexpr std::int64_t kChecksumBlockElems = std::int64_t(1) << 18;

// An array of n elements of which rank q of the communicator holds ranges[q] (disjoint,
// together covering [0, n), in any order; empty for a rank holding nothing, e.g. a replica);
// `local` points at this rank's ranges[rank] elements.
struct DistributedArray {
  std::vector<h5::FlatRange> ranges;
  const float* local = nullptr;
  std::int64_t n = 0;
};

// The block tables of several arrays, on every rank. A block is hashed by the rank holding its
// first element, which receives the block's remaining elements (fewer than a block) from the
// ranks that hold them. One MPI_Alltoallv and one MPI_Allreduce for all the arrays together,
// so a unit's tensors cost two collectives, not two each. Collective over comm.
std::vector<std::vector<std::uint64_t>> block_hashes(
    MPI_Comm comm, const std::vector<DistributedArray>& arrays,
    std::int64_t block_elems = kChecksumBlockElems);

// Hashes the blocks that start in r into table (sized for the whole array); data holds r's
// elements. r must end at a block boundary or at n (whole blocks only). No communication.
void hash_whole_blocks(const float* data, h5::FlatRange r, std::int64_t n, std::int64_t block_elems,
                       std::vector<std::uint64_t>& table);

// The dataset's one checksum: XXH3-64 of its block table (the uint64 values, little-endian),
// i.e. a hash of the full contents in row-major order.
std::uint64_t table_hash(const std::vector<std::uint64_t>& blocks);

}  // namespace fsdp
