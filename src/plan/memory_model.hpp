// SPDX-License-Identifier: MIT
// The planner's memory model: what one rank of this trainer allocates, by tracker category and
// space, for a model, a strategy, N ranks, prefetch depth, offload, precision, micro-batch
// and activation checkpointing. In fp32 it runs the engine itself on a counting tracker
// (plan/counted_step.hpp), so its peaks are the MemoryTracker's by construction; bf16 is modelled
// as bf16 kernels on a GPU would run it (plan/gpu_bf16_memory.hpp). Also the closed-form
// ZeRO model-state formulas (the paper's "mixed precision Adam, K = 12" mode) and the search for
// the largest model that fits a device budget. No MPI.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.hpp"
#include "core/memory.hpp"
#include "config/run_setup.hpp"
#include "fsdp/strategy.hpp"
#include "model/architecture.hpp"

namespace fsdp::plan {

// The typed setup the trainer runs (config/run_setup.hpp), under the planner's names.
using fsdp::ModelConfig;
using fsdp::Offload;
using fsdp::Precision;
using fsdp::kNormBlock;
using Setup = fsdp::RunSetup;
using fsdp::setup_from_config;
using fsdp::strategy_name;
using fsdp::to_string;
using fsdp::parse_offload;
using fsdp::parse_precision;

// Parameters per sharding unit, in the engine's order, as the model's architecture lists its
// units (model/architecture.hpp); fsdp::num_params(s) is their sum.
std::vector<std::int64_t> unit_numels(const ModelConfig& s, const ModelChoices& c = {});

// The GPT family the planner scales along: n_embd = aspect * n_layer, rounded to a multiple of
// head_dim, n_head = n_embd / head_dim; vocabulary and context are taken from `like`.
// aspect 128 with head_dim 128 is GPT-3's ratio from 6.7B up (4096/32, 12288/96).
ModelConfig family_shape(int n_layer, const ModelConfig& like, double aspect = 128.0,
                        int head_dim = 128);
// The family member whose parameter count is nearest `params`.
ModelConfig shape_for_params(double params, const ModelConfig& like, double aspect = 128.0,
                            int head_dim = 128);

// Bytes per element of each kind of buffer with bf16 kernels on a GPU (bf16 plans, and the
// optimizer's memory traffic in the time model).
// bf16 is modelled as it runs with bf16 kernels on a GPU: bf16 gathered parameters, working
// copies and activations; the fp32 shard (zero3, hybrid) or a separate fp32 shard (ddp, zero1,
// zero2: `master`) as AdamW's master weights; gradients in fsdp.reduce_dtype. (The CPU build's
// bf16 stores bf16 but computes in fp32: README, "Memory features".)
struct ElementBytes {
  int param = 4;       // working parameters: gathered units, the full copy ddp/zero1/zero2 keep
  int master = 0;      // the separate fp32 master shard of ddp/zero1/zero2 under bf16
  int grad = 4;        // full gradients, gradient shards and reduce-scatter buffers
  int optimizer = 8;   // AdamW's two fp32 moments
  int activation = 4;
};
ElementBytes element_bytes(const Setup& s);

// Activation elements one rank allocates (the model's constructor, all persistent), as the
// architecture counts them.
std::int64_t activation_elements(const ModelConfig& s, const ModelChoices& c, int micro_batch);

struct MemoryPlan {
  std::int64_t params = 0;         // real parameters
  std::int64_t padded_params = 0;  // each unit padded to a multiple of the shard group
  std::int64_t largest_unit = 0;   // padded elements of the largest unit
  int shard_group = 1;
  std::int64_t disk_bytes = 0;  // fsdp.offload = nvme: this rank's offload file
  // Peaks in bytes, as MemoryTracker::peak(category, space) and peak_total(space) report them.
  std::array<std::array<std::int64_t, kNumMemCategories>, 2> peak{};
  std::array<std::int64_t, 2> peak_total{};
  std::int64_t device(MemCategory c) const { return peak[int(MemSpace::Device)][int(c)]; }
  std::int64_t host(MemCategory c) const { return peak[int(MemSpace::Host)][int(c)]; }
  std::int64_t device_total() const { return peak_total[int(MemSpace::Device)]; }
  std::int64_t host_total() const { return peak_total[int(MemSpace::Host)]; }
};
MemoryPlan plan_memory(const Setup& s);

// ---- The ZeRO paper's model-state formulas (Rajbhandari et al. 2020, section 5) -------------
// Bytes per parameter: param (fp16/bf16 working copy), grad, and K for the optimizer (fp32
// master, momentum and variance: K = 12 for mixed-precision Adam).
struct ModelStateBytes {
  double param = 2.0;
  double grad = 2.0;
  double optimizer_k = 12.0;
};
// "Paper mode": mixed-precision Adam, 2 + 2 + K with K = 12.
inline ModelStateBytes paper_mixed_precision() { return {2.0, 2.0, 12.0}; }
// What this trainer's fp32 AdamW keeps: 4 + 4 + 8 (the fp32 params are the master).
inline ModelStateBytes fp32_adamw() { return {4.0, 4.0, 8.0}; }
// Per-rank model states for psi parameters over n ranks, unpadded, no transient buffers:
//   ddp (p+g+K)psi;  zero1 (p+g)psi + K psi/n;  zero2 p psi + (g+K) psi/n;  zero3 (p+g+K) psi/n.
// Hybrid shards like zero3 over its shard group: pass n = the shard-group size.
double zero_model_state_bytes(double psi, int n, Strategy s,
                              const ModelStateBytes& b = paper_mixed_precision());

// ---- The largest model that fits ----------------------------------------------------------
struct LargestModel {
  bool found = false;  // false: not even one layer fits
  ModelConfig shape;
  std::int64_t params = 0;
  MemoryPlan memory;
  ModelConfig next_shape;  // the first family member that does not fit
  std::int64_t next_device_total = 0;
};
// Walks the family (family_shape) up in depth and returns the largest member whose device peak
// (peak_total) is within device_budget bytes; everything else comes from `base`.
LargestModel largest_model(const Setup& base, std::int64_t device_budget, double aspect = 128.0,
                           int head_dim = 128, int max_layers = 2048);

}  // namespace fsdp::plan
