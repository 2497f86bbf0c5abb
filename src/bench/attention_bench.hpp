// SPDX-License-Identifier: MIT
// `fsdp-bench attention`: forward and backward time of causal attention on one rank, the fused
// kernel (model/flash_attention.hpp) beside the materialised one (model/attention.hpp), as an
// nccl-tests-style table. GFLOP/s count the causal half: 4 B H D T(T+1)/2 for the forward's two
// products, twice that for the backward's four (the fused path's recomputed scores are its own
// cost, not counted as work).
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

namespace fsdp::bench {

struct AttentionBenchOptions {
  int batch = 1, heads = 12, kv_heads = 0, head_dim = 64;  // kv_heads 0 = heads
  std::vector<int> seq_lens{256, 1024, 4096};
  std::string path = "both";  // both | fused | materialized
  int iters = 5;              // timed pairs per figure (the median is kept)
  bool check = false;         // also compare the two paths' results (exit 1 past 1e-4)
};

int run_attention_bench(MPI_Comm world, const AttentionBenchOptions& o);

}  // namespace fsdp::bench
