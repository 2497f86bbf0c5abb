// SPDX-License-Identifier: MIT
// Every rank of a job must run the same deck. Ranks started with different decks (a local
// file that differs between nodes, an MPMD launch `-np 1 ... : -np 1 ... --set ...`) would
// otherwise meet in different collectives and wait forever; they are compared at start by a
// hash of the resolved deck, and the ranks that differ are named with the first key.
#pragma once
#include <mpi.h>

#include <string>

#include "comm/agree.hpp"

namespace fsdp {

// The start of every multi-rank program: `error` (with its exit `code`) is this rank's failure
// to read its deck, "" when it read one, `deck` the text to compare. Returns, on every rank,
// the first failing rank's error ("rank R: " before it when rank 0 did not fail), else the
// disagreement (exit code 2), else nothing (rank -1). Collective over comm.
Agreed agree_on_start(MPI_Comm comm, const std::string& error, int code, const std::string& deck);

// "" when every rank of comm passed the same `deck` (the resolved TOML plus the command-line
// choices that shape the run, as `key = value` lines under [section] headers), else one line:
// "the run deck differs between ranks: model.n_layer is 4 on rank 0 but 2 on rank 1".
// Collective over comm.
std::string deck_disagreement(MPI_Comm comm, const std::string& deck);

// The first key whose value differs between two such texts, as "section.key is A ... B", or
// "" when they are the same. Pure (tests/unit).
std::string first_difference(const std::string& a, const std::string& b, int rank_a, int rank_b);

}  // namespace fsdp
