// SPDX-License-Identifier: MIT
// Sharded checkpoints of a rank's state (io/checkpointed_state.hpp) (checkpoint_format.hpp has the file layout).
//
// Writing: every rank of the job opens <dir>/step_NNNNNN.h5.<run id>.tmp through MPI-IO and, for each
// tensor of each unit, writes the part of its flat shard that falls in that tensor's dataset as
// one collective hyperslab write (a flat range of a row-major tensor is at most a partial row,
// full rows and a partial row). Replicas and ranks whose shard misses the tensor select none.
// No rank ever holds more than its shard. The file is flushed (MPI_File_sync on every rank) and
// closed, all ranks meet at a barrier, and only then rank 0 renames it, points `latest` at it
// and removes this run's older checkpoints beyond checkpoint.keep (io/checkpoint_dir.hpp: never
// another run's file, the file just written or the one the run resumed from). A killed job
// leaves at most a *.tmp, which is never read. Before any of it rank 0 checks that the file
// system has room for the whole file and that no other run's file has the name; each phase
// runs under the watchdog (comm.timeout_s), so a full quota or a stopped rank ends the job.
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
// so they all throw the same CheckpointError and none is left in a collective. A failure found
// before writing (no room, unusable directory) is a CheckpointWriteError on every rank; one while
// writing ends the job at once with exit code 7 (core/exit_codes.hpp) without unwinding through
// the collective close of the file (the previous checkpoint stays intact).
#pragma once
#include <mpi.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/owned_comm.hpp"
#include "comm/safety.hpp"
#include "io/checkpoint_config.hpp"
#include "io/checkpointed_state.hpp"
#include "io/checkpoint_format.hpp"

namespace fsdp {

using ckpt::CheckpointError;

// A checkpoint that cannot be written; the same on every rank. Exit code 7.
struct CheckpointWriteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Checkpointer {
 public:
  enum class Use { Read, Write };
  // Collective over world (it duplicates it). run supplies checkpoint.dir and .keep, the model
  // and the deck recorded in each file. Use::Write (a training run, which may be asked for a
  // checkpoint by a signal at any step) checks now that checkpoint.dir can be written, and with
  // checkpoint.every > 0 makes it and locks it for this job (else at the first save); all throw
  // CheckpointWriteError on every rank.
  Checkpointer(MPI_Comm world, const CheckpointRun& run, Use use = Use::Read);
  ~Checkpointer();

  // The run this job continues: a fresh id (rank 0's) until a resume adopts the file's.
  const std::string& run_id() const { return run_id_; }
  // After resuming from `path` (written by run `id`, "" for an older file): this job is that
  // run, and the file is never removed by retention.
  void adopt_run(const std::string& id, const std::string& path);
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

  void write_file(CheckpointedState& state, const ckpt::Header& h, const std::string& tmp) noexcept;
  std::string in_the_way(const std::string& name) const;  // rank 0
  std::string take_dir();  // makes and locks dir_ once (rank 0), agreed; "" or why not

  comm::OwnedComm comm_;
  // Heartbeats of this communicator's ranks: a watch over file I/O names the rank that stopped
  // (one node only; nullptr across nodes, where the report says it cannot tell).
  std::unique_ptr<comm::ArrivalBoard> board_;
  int rank_ = 0, size_ = 1;
  CheckpointRun run_;
  std::string dir_;
  std::string run_id_;
  std::string resumed_from_;  // a file name in dir_, protected from retention
  bool writes_ = false;  // Use::Write
  struct Lock;
  std::unique_ptr<Lock> lock_;
};

}  // namespace fsdp
