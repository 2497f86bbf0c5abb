// SPDX-License-Identifier: MIT
// Small models and runs for the multi-rank engine tests. Unit sizes are chosen so that none
// divides by 3 (the embedding has 860 parameters, a block 5060, ln_f 40): padding is exercised.
#pragma once
#include <mpi.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "comm/agree.hpp"

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

// A Llama with every feature on (grouped-query heads 2:1, SwiGLU, rotary with the llama3 blend,
// untied head) whose units do not divide by 3 either: embedding 5120, layer 3280, norm with
// lm_head 5140 (tied: 20).
inline RunConfig tiny_llama_config(const std::string& strategy, int prefetch) {
  RunConfig c = tiny_config(strategy, prefetch);
  c.model.arch = "llama";
  c.model.n_head = 2;
  c.model.n_kv_head = 1;
  c.model.ffn_hidden = 34;
  c.model.tie_embeddings = false;
  c.model.rope_theta = 500000.0;
  c.model.rope_scaling = "llama3";
  c.model.rope_factor = 4.0;
  c.model.rope_low_freq_factor = 1.0;
  c.model.rope_high_freq_factor = 2.0;
  c.model.rope_original_context = 4;
  return c;
}

// The mixtures of experts on tiny_llama_config's layers: 4 experts of width 24, 2 per token,
// the balance loss on. qwen3_moe: Qwen3's attention (head size 12), layer 0 dense; mixtral:
// every layer sparse, experts as wide as ffn_hidden.
inline RunConfig tiny_moe_config(const std::string& arch, const std::string& strategy, int prefetch) {
  RunConfig c = tiny_llama_config(strategy, prefetch);
  c.model.arch = arch;
  c.model.n_experts = 4;
  c.model.experts_per_token = 2;
  c.model.output_router_logits = true;
  c.model.router_aux_loss_coef = 0.01;
  if (arch == "qwen3_moe") {
    c.model.head_size = 12;
    c.model.moe_ffn_hidden = 24;
    c.model.mlp_only_layers = "0";
  } else {
    c.model.ffn_hidden = 24;
  }
  return c;
}

inline TrainOptions quiet() {
  TrainOptions o;
  o.log = false;
  return o;
}

// Bit-for-bit equality of two runs' values (losses, norms, parameters): NaNs included, and
// -0 told from 0, which == would not.
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// A quiet run's per-step losses and gradient norms, and every unit's parameters at the end
// (Engine::full_params: gathered, the whole buffer).
struct RunResult {
  std::vector<double> losses, norms;
  std::vector<std::vector<float>> params;
};

inline RunResult run_result(const RunConfig& cfg, MPI_Comm comm) {
  Trainer t(cfg, comm, quiet());
  const TrainSummary s = t.run();
  RunResult r{s.losses, s.grad_norms, {}};
  for (std::size_t u = 0; u < t.engine().units().size(); ++u)
    r.params.push_back(t.engine().full_params(int(u)));
  return r;
}

// The whole model state in flat order (the first numel elements of each unit): every shard of
// the first shard group, which holds each element once, gathered as bytes.
inline std::vector<float> gather_state(Trainer& t, MPI_Comm comm, ShardVec (Engine::*part)(int)) {
  Engine& e = t.engine();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const bool first_group = rank < e.shard_group_size();
  std::vector<float> all;
  for (int u = 0; u < int(e.units().size()); ++u) {
    std::vector<float> mine = first_group ? (e.*part)(u).values() : std::vector<float>();
    int n = int(mine.size()), size = 0;
    MPI_Comm_size(comm, &size);
    std::vector<int> counts(static_cast<std::size_t>(size)),
        displs(static_cast<std::size_t>(size), 0);
    MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
    for (int q = 1; q < size; ++q)
      displs[std::size_t(q)] = displs[std::size_t(q - 1)] + counts[std::size_t(q - 1)];
    std::vector<float> full(std::size_t(displs.back() + counts.back()));
    MPI_Allgatherv(mine.data(), n, MPI_FLOAT, full.data(), counts.data(), displs.data(), MPI_FLOAT,
                   comm);
    full.resize(std::size_t(e.units()[std::size_t(u)].numel));
    all.insert(all.end(), full.begin(), full.end());
  }
  return all;
}

// A fresh directory under /tmp every rank sees (rank 0 makes it); removed at the end.
struct SharedTmpDir {
  std::string path;
  explicit SharedTmpDir(const std::string& prefix) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::string p;
    if (rank == 0) {
      std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
      p = ::mkdtemp(tmpl.data());
    }
    path = broadcast_string(MPI_COMM_WORLD, p, 0);
  }
  ~SharedTmpDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::filesystem::remove_all(path);
  }
  SharedTmpDir(const SharedTmpDir&) = delete;
  SharedTmpDir& operator=(const SharedTmpDir&) = delete;
};

inline int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

}  // namespace fsdp::test
