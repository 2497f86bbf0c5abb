// SPDX-License-Identifier: MIT
// `fsdp-bench gemm`: the GEMM rate of every bf16 GEMM shape a deck's model runs, per library on
// this CPU or GPU: the fp32 GEMM (OpenBLAS or cuBLAS), oneDNN's fp32 and bf16 matmuls where the
// build has oneDNN, and fsdp's own bf16 call (whichever path it takes here). The shapes come
// from one real training step of the deck, so they are exactly the model's.
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

namespace fsdp::bench {

struct GemmBenchOptions {
  std::string config;             // the run deck
  std::vector<std::string> sets;  // its overrides
  int iters = 5;                  // timed calls per figure (the median is kept)
};

int run_gemm_bench(MPI_Comm world, const GemmBenchOptions& o);

}  // namespace fsdp::bench
