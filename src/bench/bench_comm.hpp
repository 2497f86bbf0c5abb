// SPDX-License-Identifier: MIT
// `fsdp-bench comm`: an nccl-tests-style table of our all-gather, reduce-scatter and all-reduce
// beside the raw MPI collective on the same ranks, with a correctness count and the ratio.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <string>

namespace fsdp::comm {

struct CommBenchOptions {
  std::size_t min_bytes = std::size_t(64) << 10;  // of the full buffer on each rank
  std::size_t max_bytes = std::size_t(64) << 20;
  int factor = 2;  // size step
  // Timed calls per figure; 0 = enough for min_time_s (at least 20): a 4 us collective timed
  // 20 times is 80 us of clock, which the machine's jitter swamps.
  int iters = 0;
  double min_time_s = 0.05;
  int warmup = 5;
  bool fallback = false;  // also time our MPI path (no shared memory) as impl "ours-mpi"
  std::size_t window_bytes = std::size_t(2) << 20;
  std::size_t step_bytes = std::size_t(1) << 20;
  std::size_t single_copy_max_bytes = std::size_t(32) << 20;
  std::string json_path;  // empty: no JSON
};

// Collective over comm; rank 0 prints. Returns non-zero when any element came out wrong.
int run_comm_bench(MPI_Comm comm, const CommBenchOptions& options);

}  // namespace fsdp::comm
