// SPDX-License-Identifier: MIT
// fsdp-ckpt's work on checkpoint files, with no engine and any number of ranks: each dataset is
// split into whole checksum blocks spread over the ranks, so no rank reads more than its share
// of one dataset at a time. Rank 0 prints; every function is collective and returns the exit
// code on every rank.
#pragma once
#include <mpi.h>

#include <string>

namespace fsdp::ckpt {

// Layout, step, sizes and config; with `datasets` every dataset with its shape, with `deck`
// the stored run deck. 0, or 2 when the file cannot be read as a checkpoint.
int info(MPI_Comm comm, const std::string& path, bool datasets, bool deck);

// Every dataset the stored model needs is present, float32, of its shape, and matches its
// checksums: 0 when all do, 1 naming each dataset that does not, 2 when unreadable.
int verify(MPI_Comm comm, const std::string& path);

// Tensor by tensor max |a - b| and max |a - b| / max(|a|, |b|): 0 when identical, 1 when any
// value, shape or dataset differs, 2 when a file is unreadable.
int diff(MPI_Comm comm, const std::string& a, const std::string& b);

}  // namespace fsdp::ckpt
