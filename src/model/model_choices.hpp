// SPDX-License-Identifier: MIT
// The run's choices the model computes with, beside its shape (ModelConfig, which checkpoints
// store and Hugging Face files describe). config/run_setup.cpp fills them from the deck, once;
// none of them but `lora` (which adds the adapters) changes a tensor's name, shape or value, so
// a checkpoint resumes under any of them.
#pragma once
#include <cmath>
#include <string>
#include <vector>

namespace fsdp {

// moe.* (config/run_config.hpp's MoeConfig) and what the run adds: how a mixture of experts
// balances its load and caps each expert, as the model computes it (model/moe/moe_layout.cpp).
struct MoeChoices {
  std::string balance = "auto";  // auto | aux_loss | bias | none
  double aux_coef = -1.0;        // < 0: the model's router_aux_loss_coef
  double bias_rate = 1e-3;
  double capacity_factor = 0.0;  // 0: no cap
  // Set with train.deterministic under expert parallelism: the experts' weight gradients go home
  // to the rank whose tokens made them, so each micro-batch's gradient is whole where it ran
  // (model/decoder/moe_ep.cpp).
  bool grads_home = false;
};

// lora.* (config/run_config.hpp's LoraConfig) where lora.enabled: every tensor of the base is
// frozen and each targeted projection gains an adapter, B [out, r] A [r, in], whose product
// scaled by scale() adds to the projection's output (model/layers/adapted_linear.hpp). Unlike
// the other choices it adds tensors: the adapters (model/layers/lora_layout.hpp).
struct LoraChoices {
  int rank = 0;  // 0: no adapters, every tensor trained (< 0: lora.rank = 0 asked, refused)
  double alpha = 0.0;
  bool rslora = false;
  double dropout = 0.0;
  std::vector<std::string> targets;  // Hugging Face module names, or {"all-linear"}
  bool on() const { return rank > 0; }
  float scale() const { return float(rslora ? alpha / std::sqrt(double(rank)) : alpha / rank); }
};

struct ModelChoices {
  // fsdp.unit = sublayer: each block is two units (its attention and its MLP, each with its
  // norm). The tensors and a checkpoint are the same either way; only the grouping differs.
  bool sublayer_units = false;
  // model.activation_checkpointing = blocks: each block keeps its input and recomputes the rest
  // in backward.
  bool checkpoint_blocks = false;
  std::string attention = "auto";  // model.attention: auto | fused | materialized
  // fsdp.expert_parallel: how many ranks share a sparse layer's experts (E/P each); 1: none.
  int expert_parallel = 1;
  MoeChoices moe;
  LoraChoices lora;
  // The slices a sparse layer's experts fall into: at least 1.
  int expert_slices() const { return expert_parallel > 1 ? expert_parallel : 1; }
};

}  // namespace fsdp
