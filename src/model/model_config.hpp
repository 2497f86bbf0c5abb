// SPDX-License-Identifier: MIT
// A decoder's shape, owned by the model layer: config/ fills it from the deck or a weights file,
// checkpoints store it, the planner scales it. The run's choices that the model computes with
// (units, checkpointing, the attention kernel, the experts' balance and parallelism) are
// ModelChoices (model/model_choices.hpp), not part of the shape. Which fields an
// architecture reads is its own business, and its checks refuse the ones it does not compute
// (GPT-2: no grouped-query heads, no untied head). B = micro-batch, T = block_size,
// C = n_embd, V = vocab_size, L = n_layer, H = n_head, KV = n_kv_head, F = ffn_hidden.
#pragma once
#include <string>

#include "model/registry.hpp"

namespace fsdp {

struct ModelConfig {
  std::string arch = kDefaultArch;  // model.arch: a name in model/registry.hpp
  int n_layer = 4;
  int n_head = 4;
  int n_embd = 128;
  int vocab_size = 256;
  int block_size = 64;
  int n_positions = 0;  // rows of the position table; 0 = block_size
  int positions() const { return n_positions > 0 ? n_positions : block_size; }
  int n_kv_head = 0;  // key/value heads (grouped-query attention); 0 = n_head
  int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
  // model.head_dim: each head's size; 0 = n_embd / n_head (Qwen3 sets it: 128 with 1024 / 16).
  int head_size = 0;
  int head_dim() const { return head_size > 0 ? head_size : n_embd / n_head; }
  int ffn_hidden = 0;  // the MLP's hidden width; 0 = the architecture's own (GPT-2: 4C)
  bool tie_embeddings = true;  // the LM head is the token embedding
  double norm_eps = 1e-5;      // RMSNorm's epsilon (Llama); GPT-2's LayerNorm is fixed at 1e-5
  // Rotary position embedding (Llama): inverse frequencies theta^(-2i/D), optionally with
  // Llama 3.1's blend ("llama3": long wavelengths divided by rope_factor, short ones kept,
  // a smooth mix between the low and high frequency cut-offs of rope_original_context).
  double rope_theta = 10000.0;
  std::string rope_scaling = "none";  // none | llama3
  double rope_factor = 8.0, rope_low_freq_factor = 1.0, rope_high_freq_factor = 4.0;
  int rope_original_context = 8192;
  // A mixture of experts (model.arch = qwen3_moe, mixtral; model/moe/): each sparse layer's MLP
  // is n_experts SwiGLU experts of width moe_ffn() behind a router that sends every token to
  // experts_per_token of them. Layer l is sparse unless listed in mlp_only_layers (comma-
  // separated indices) and when (l + 1) is a multiple of decoder_sparse_step (Qwen3-MoE's rule);
  // dense layers keep the SwiGLU MLP of ffn_hidden. n_experts 0: no experts (every other model).
  int n_experts = 0;
  int experts_per_token = 2;
  int moe_ffn_hidden = 0;  // 0 = ffn_hidden (Mixtral's intermediate_size is the experts' width)
  int moe_ffn() const { return moe_ffn_hidden > 0 ? moe_ffn_hidden : ffn_hidden; }
  bool norm_topk_prob = true;  // the k weights renormalised to sum to 1 (Mixtral: always)
  int decoder_sparse_step = 1;
  std::string mlp_only_layers;
  bool sparse_layer(int l) const;
  // Hugging Face's load-balancing loss, added times router_aux_loss_coef when
  // output_router_logits is set (moe.balance overrides both: config/run_config.hpp).
  double router_aux_loss_coef = 0.001;
  bool output_router_logits = false;
};

}  // namespace fsdp
