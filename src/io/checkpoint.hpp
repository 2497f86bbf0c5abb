// SPDX-License-Identifier: MIT
// Sharded checkpoints of a rank's state (io/checkpointed_state.hpp) (checkpoint_format.hpp has the file layout).
//
// Writing: every rank of the job opens <dir>/step_NNNNNN.h5.tmp through MPI-IO and, for each
// tensor of each unit, writes the part of its flat shard that falls in that tensor's dataset as
// one collective hyperslab write (a flat range of a row-major tensor is at most a partial row,
// full rows and a partial row). Replicas and ranks whose shard misses the tensor select none.
// No rank ever holds more than its shard. The file is flushed (MPI_File_sync on every rank) and
// closed, all ranks meet at a barrier, and only then rank 0 renames it, points `latest` at it
// and prunes old checkpoints. A killed job leaves at most a *.tmp, which is never read.
//
// Checksums: each dataset's row-major contents are cut into fixed blocks of
// checksum_block_elems (2^18) elements, independent of the rank count. The rank holding a
// block's first element hashes it (XXH3-64), receiving the block's remainder from the ranks
// that hold it; one all-to-all and one all-reduce per unit serve all its tensors
// (block_hash.hpp). The table goes into the dataset's attributes. Loading reads each rank's
// slice (independent reads), recomputes the tables the same way over the current ranks and
// compares, so a flipped bit anywhere in the raw data is found without reading anything twice;
// the file's metadata is covered by HDF5's own checksums (1.8 format).
//
// Failures: loading runs in phases (open and check every header, shape and checksum table;
// then read and verify unit by unit), and after each phase all ranks agree on the first error,
// so they all throw the same CheckpointError and none is left in a collective. A failure while
// writing is fatal to the job (the previous checkpoint stays intact).
#pragma once
#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "comm/owned_comm.hpp"
#include "config/run_config.hpp"
#include "io/checkpointed_state.hpp"
#include "io/checkpoint_format.hpp"

namespace fsdp {

using ckpt::CheckpointError;

class Checkpointer {
 public:
  // Collective over world (it duplicates it). cfg supplies checkpoint.dir and .keep, the model
  // and the deck recorded in each file.
  Checkpointer(MPI_Comm world, const RunConfig& cfg);

  // Writes the state's shards with the training state of `h` (step, tokens_seen,
  // sampler_seed, optimizer_steps, lr_step, lr; the rest is filled in here) and returns the
  // complete file's path. Collective. (core/faults.hpp can pause it after /model, for tests.)
  std::string save(CheckpointedState& state, ckpt::Header h);

  // Reads `path` into the state (any rank count, any strategy), verifies every dataset,
  // rebuilds the full parameters, sets the optimizer's step count and returns the header.
  // Throws the same CheckpointError on every rank (the shards may then be partly
  // overwritten). Collective.
  ckpt::Header load(const std::string& path, CheckpointedState& state);
  // Only the parameters (/model), verified the same way; the optimizer is left as it is
  // (fsdp-train --init-from: a fresh optimizer on a checkpoint's weights). Collective.
  ckpt::Header load_params(const std::string& path, CheckpointedState& state);

  // `--resume auto`: loads the newest complete checkpoint in checkpoint.dir that verifies,
  // calling warn(message) for each one that does not. Returns its path, or "" when there is
  // none (then the state may hold a failed attempt's partial shards: rebuild it).
  std::string load_newest(CheckpointedState& state, ckpt::Header& header,
                          const std::function<void(const std::string&)>& warn);

  const std::string& dir() const { return dir_; }

 private:
  ckpt::Header read(const std::string& path, CheckpointedState& state,
                    const std::vector<ckpt::Part>& parts);

  comm::OwnedComm comm_;
  int rank_ = 0, size_ = 1;
  RunConfig cfg_;
  std::string dir_;
};

}  // namespace fsdp
