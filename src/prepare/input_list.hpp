// SPDX-License-Identifier: MIT
// The inputs of fsdp-data prepare as one byte stream: each file's size and where it starts.
// Rank 0 opens every file once and tells the others (one open per file, not one per rank).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "prepare/first_error.hpp"

namespace fsdp::prepare {

enum class InputKind { Text, Jsonl };

struct InputList {
  std::vector<std::string> paths;
  std::vector<InputKind> kinds;
  std::vector<std::uint64_t> sizes, starts;  // starts: the global offset of each file
  std::uint64_t total = 0;
  // The first file that cannot be read or has another extension; files from it on are sized
  // 0 and not read (the run fails at it, or at an error before it).
  FoundError problem;
};

// The kind of a path by its extension (.txt, .jsonl); false for any other.
bool input_kind(const std::string& path, InputKind& kind);

// Collective over comm: rank 0 checks and sizes every path, every rank gets the list.
InputList list_inputs(MPI_Comm comm, const std::vector<std::string>& paths);

}  // namespace fsdp::prepare
