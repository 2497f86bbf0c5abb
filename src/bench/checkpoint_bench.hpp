// SPDX-License-Identifier: MIT
// Checkpoint bandwidth: writes and reads the full training state (parameters and both AdamW
// moments) of a run deck's model on the job's ranks, beside `dd` moving the same number of
// bytes through the same directory, and prints the table (fsdp-ckpt bench).
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

namespace fsdp {

struct CheckpointBenchOptions {
  std::string config;                  // run deck (the model and strategy)
  std::vector<std::string> overrides;  // --set section.key=value
  std::string dir;                     // where the checkpoints and dd's file go
  int reps = 3;
};

// Returns the exit code (0, or 2 for a bad deck). Collective over world.
int run_checkpoint_bench(MPI_Comm world, const CheckpointBenchOptions& opts);

}  // namespace fsdp
