// SPDX-License-Identifier: MIT
// The first bad input in input order, agreed by every rank: each rank stops at the first error
// in its own share, and the one reported is the earliest over all ranks (by file, then byte),
// so the message is the same at any number of ranks, and no rank is left waiting.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <limits>
#include <string>

namespace fsdp::prepare {

struct FoundError {
  static constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t file = kNone;  // index of the input on the command line
  std::uint64_t offset = 0;    // byte in that file
  std::string message;         // the whole line: "<file>:<line>: <problem>"

  bool found() const { return file != kNone; }
  bool before(const FoundError& o) const {
    return file != o.file ? file < o.file : offset < o.offset;
  }
};

// The earliest of every rank's `mine` (not found on any rank: not found), on every rank.
// Collective over comm.
FoundError agree_on_first_error(MPI_Comm comm, const FoundError& mine);

}  // namespace fsdp::prepare
