// SPDX-License-Identifier: MIT
// Small models and runs for the multi-rank engine tests. Unit sizes are chosen so that none
// divides by 3 (the embedding has 860 parameters, a block 5060, ln_f 40): padding is exercised.
#pragma once
#include <mpi.h>

#include "config/load_config.hpp"
#include "train/trainer.hpp"

namespace fsdp::test {

inline RunConfig tiny_config(const std::string& strategy, int prefetch) {
  RunConfig c;
  c.model.n_layer = 2;
  c.model.n_head = 2;
  c.model.n_embd = 20;
  c.model.vocab_size = 256;
  c.model.block_size = 8;
  c.train.steps = 5;
  c.train.batch_size = 12;  // divides over 1, 2, 3 and 4 ranks
  c.train.micro_batch_size = 1;
  c.train.lr = 1e-2;
  c.train.min_lr = 1e-3;
  c.train.warmup_steps = 2;
  c.train.peak_tflops = 1.0;  // skip the GEMM measurement
  c.eval.every = 0;
  c.eval.sequences = 0;
  c.fsdp.strategy = strategy;
  c.fsdp.prefetch = prefetch;
  c.fsdp.shard_group_size = strategy == "hybrid" ? 1 : 0;
  return c;
}

inline TrainOptions quiet() {
  TrainOptions o;
  o.log = false;
  return o;
}

inline int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

}  // namespace fsdp::test
