// SPDX-License-Identifier: MIT
// Reading a checkpoint file without an engine, on any number of ranks (fsdp-ckpt's info,
// verify, diff and export): the ranks open it together, agree on whether that worked, and split
// each dataset into whole checksum blocks dealt round-robin, so no rank reads more than its
// share of one dataset at a time.
#pragma once
#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "io/checkpoint_format.hpp"
#include "io/h5_io.hpp"

namespace fsdp::ckpt {

// Blocks per rank per round: 16 MiB of float32 read at a time.
constexpr std::int64_t kBlocksPerRead = 16;

struct Comm {
  MPI_Comm comm;
  int rank = 0, size = 1;
  explicit Comm(MPI_Comm c);
};

struct Expected {
  std::string path;
  std::vector<hsize_t> dims;
};

// Every dataset a checkpoint of model m holds (under train.optimizer = `optimizer`), in
// layout order.
std::vector<Expected> expected_datasets(const ModelConfig& m, OptimizerKind optimizer,
                                       const LoraChoices& lora = {});

// An open checkpoint and its header; the ranks agree on whether opening worked.
struct Opened {
  h5::File file;
  Header header;
  std::string error;
};
Opened open_checkpoint(const Comm& c, const std::string& path);

// This rank's rounds over a dataset of n elements: whole blocks, kBlocksPerRead per rank per
// round, round-robin over the ranks.
void for_my_pieces(const Comm& c, std::int64_t n, std::int64_t B,
                   const std::function<void(h5::FlatRange)>& fn);

// A dataset's stored checksum table (xxh3_blocks, one per block of B elements of its n),
// checked against itself (its xxh3); throws h5::H5Error saying what is wrong with it.
std::vector<std::uint64_t> stored_checksums(hid_t dataset, std::int64_t n, std::int64_t B);

// Why dataset `e` does not match what the header promises, or "" (collective metadata reads).
std::string check_shape(hid_t file, const Expected& e);

}  // namespace fsdp::ckpt
