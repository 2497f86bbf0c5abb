// SPDX-License-Identifier: MIT
// The resolved run deck: every key of the schema (config/schema.cpp) as a typed field. The
// model.* and checkpoint.* sections are the model's and io's own structs.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "io/checkpoint_config.hpp"
#include "model/layers/lora_layout.hpp"
#include "model/model_config.hpp"

namespace fsdp {

struct TrainConfig {
  int steps = 200;
  int batch_size = 8;        // global sequences per step
  int micro_batch_size = 8;  // sequences one rank runs through forward+backward at a time
  double lr = 1e-3;
  double min_lr = 1e-4;
  int warmup_steps = 20;
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // 0 disables clipping
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  std::uint64_t seed = 1337;
  bool deterministic = false;
  std::string on_nonfinite = "abort";  // abort | skip_step
  bool allow_nonfinite_weights = false;  // else a NaN/Inf parameter at load is exit 5
  int log_every = 1;
  double peak_tflops = 0.0;  // per rank; 0 = measure the step's own GEMMs after step 1
  std::string optimizer = "adamw";  // adamw | muon (the hidden matrices; AdamW the rest)
};

// train.optimizer = muon (fsdp/optim/muon.hpp, docs/optimizers.md).
struct MuonConfig {
  double momentum = 0.95;
  bool nesterov = true;
  int ns_steps = 5;                   // Newton-Schulz iterations
  std::string ns_dtype = "fp32";      // fp32 | bf16: what Newton-Schulz's GEMMs read
  std::string scale = "match_adamw";  // match_adamw | original
  double lr = 0.02;                   // scale = original: Muon's own peak learning rate
};

// Mixtures of experts (model.n_experts > 0): how the router is balanced and whether experts
// have a capacity (docs/models.md, "Mixtures of experts").
struct MoeConfig {
  std::string balance = "auto";  // auto (Hugging Face's: aux_loss with output_router_logits) | aux_loss | bias | none
  double aux_loss_coef = -1.0;   // < 0: model.router_aux_loss_coef
  double bias_rate = 1e-3;       // balance = bias: each step's bias change per expert
  double capacity_factor = 0.0;  // > 0: an expert takes at most ceil(f N k / E) of N tokens' choices
};

// [lora]: low-rank adapters on a frozen base (docs/lora.md). Off unless enabled; rank, alpha and
// the targets are PEFT's LoraConfig r, lora_alpha and target_modules.
struct LoraConfig {
  bool enabled = false;
  int rank = 8;
  double alpha = 8.0;
  double dropout = 0.0;
  std::string targets = "all-linear";  // Hugging Face module names, space-separated, or all-linear
  bool rslora = false;                 // scale alpha / sqrt(r) instead of alpha / r
};

struct DataConfig {
  std::string train = "builtin:train";
  std::string val = "builtin:val";
  std::string format = "text";  // llmc | uint16 | text
  std::string packing = "windows";  // windows | documents (docs/data.md)
  int eos_id = -1;  // documents: the id ending each document; -1: the mask's, else the model's
};

// The [model] keys that are the run's choices rather than the model's shape (ModelConfig):
// config/run_setup.cpp turns them into ModelChoices.
struct ModelRunConfig {
  std::string activation_checkpointing = "none";  // none | blocks
  std::string attention = "auto";                 // auto | fused | materialized
};

struct EvalConfig {
  int every = 50;  // 0 = only at the end
  int sequences = 32;
  int sample_tokens = 0;  // printed after each evaluation
};

struct FsdpConfig {
  std::string strategy = "zero3";  // ddp | zero1 | zero2 | zero3 | hybrid
  int prefetch = 1;
  std::string unit = "block";      // block | sublayer: how the blocks are cut into units
  bool reshard_after_forward = true;
  bool prefetch_across_steps = true;  // the optimizer issues the next step's first gathers
  int shard_group_size = 0;  // hybrid: 0 = ranks per node
  std::string offload = "none";          // none | optimizer | params | nvme
  std::string mixed_precision = "fp32";  // fp32 | bf16
  std::string reduce_dtype = "fp32";     // fp32 | bf16
  std::string gemm_dtype = "auto";       // auto | fp32 | bf16: the GEMMs' inputs under bf16
  std::string accumulate = "unsharded";  // unsharded | sharded
  int expert_parallel = 1;  // ranks of the shard group sharing one layer's experts, E/P each
};

struct CommConfig {
  std::string backend = "auto";  // auto | mpi | nccl
  double emulate_latency_us = 0.0;
  double emulate_gbps = 0.0;  // emulated bus bandwidth in GB/s (1e9 bytes/s); 0 = off
  bool progress_thread = false;  // non-blocking one-node collectives on a progress thread
  double timeout_s = 600.0;   // watchdog (as PyTorch's collective timeout); 0 = off
};

// fsdp.offload = nvme: where the state goes, and whether the parameter shards go too.
struct OffloadConfig {
  std::string path;     // a node-local directory (one anonymous file per rank)
  bool params = false;  // the fp32 parameter shards on disk too (zero3, hybrid)
};

struct MemoryConfig {
  std::int64_t device_budget = 0;  // bytes per rank; 0 = unlimited
};

struct DebugConfig {
  bool check_collectives = false;
};

struct RunConfig {
  ModelConfig model;
  ModelRunConfig model_run;  // [model]'s run choices
  TrainConfig train;
  MuonConfig muon;
  MoeConfig moe;
  LoraConfig lora;
  DataConfig data;
  EvalConfig eval;
  FsdpConfig fsdp;
  CommConfig comm;
  OffloadConfig offload;
  MemoryConfig memory;
  CheckpointConfig checkpoint;
  DebugConfig debug;
  std::string resolved_toml;  // the full deck after overrides, as TOML text
  // "section.key" -> where the deck file (file:line:col) or a --set gave it; a key that is not
  // here took its schema default (--init-from lets the weights file decide those).
  std::map<std::string, std::string> key_origin;
};

// What a checkpointer records of this run (io/checkpoint_config.hpp).
inline CheckpointRun checkpoint_run(const RunConfig& cfg) {
  // The schema admits adamw and muon only (config/schema.cpp).
  CheckpointRun r{cfg.checkpoint, cfg.model, cfg.resolved_toml, cfg.fsdp.strategy,
                  parse_optimizer(cfg.train.optimizer).value_or(OptimizerKind::AdamW), {}};
  if (cfg.lora.enabled && cfg.lora.rank > 0) {
    r.lora.rank = cfg.lora.rank;
    r.lora.alpha = cfg.lora.alpha;
    r.lora.rslora = cfg.lora.rslora;
    r.lora.targets = lora_targets(cfg.lora.targets);
  }
  return r;
}

}  // namespace fsdp
