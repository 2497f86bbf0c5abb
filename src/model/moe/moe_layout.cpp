// SPDX-License-Identifier: MIT
#include "model/moe/moe_layout.hpp"

#include <cmath>

#include "model/counter_init.hpp"
#include "model/llama/llama_layout.hpp"

namespace fsdp::moe {

const FamilyNames& names(Family f) {
  static const FamilyNames qwen{"qwen3_moe", "Qwen3-MoE", "Qwen3MoeForCausalLM", "qwen3_moe", "mlp.",
                                ".gate_proj.weight", ".up_proj.weight", ".down_proj.weight", true};
  static const FamilyNames mixtral{"mixtral", "Mixtral", "MixtralForCausalLM", "mixtral",
                                   "block_sparse_moe.", ".w1.weight", ".w3.weight", ".w2.weight", false};
  return f == Family::Qwen3Moe ? qwen : mixtral;
}

std::vector<UnitLayout> moe_units(const ModelConfig& m, const ModelChoices& c, Family f) {
  const FamilyNames& n = names(f);
  const std::int64_t C = m.n_embd, E = m.n_experts, F = m.moe_ffn();
  return llama_units(m, c, n.qk_norm, [=](UnitLayout& b, const std::string& p) {
    const std::string x = p + n.block;
    add_llama_tensor(b, p + "post_attention_layernorm.weight", {C});
    add_llama_tensor(b, x + "gate.weight", {E, C});  // the router
    for (std::int64_t e = 0; e < E; ++e) {
      const std::string ex = x + "experts." + std::to_string(e);
      add_llama_tensor(b, ex + n.gate, {F, C});  // adjacent: one [2F, C] GEMM
      add_llama_tensor(b, ex + n.up, {F, C});
      add_llama_tensor(b, ex + n.down, {C, F});
      // The experts' placement (kExpertPart): divided over fsdp.expert_parallel's ranks where
      // that saves memory, else with the dense tensors (model/placement.hpp).
      for (std::size_t i = b.tensors.size() - 3; i < b.tensors.size(); ++i) b.tensors[i].part = kExpertPart;
    }
  });
}

BlockSpec moe_block_spec(const ModelConfig& m, const ModelChoices& c, Family f) {
  const FamilyNames& n = names(f);
  BlockSpec s = llama_block_spec(m, n.qk_norm);
  s.tag = n.arch;
  ExpertSpec& x = s.moe;
  x.E = m.n_experts;
  x.K = m.experts_per_token;
  x.F = m.moe_ffn();
  x.renorm = f == Family::Mixtral || m.norm_topk_prob;
  // moe.balance: auto is Hugging Face's (the loss exactly when output_router_logits says).
  const std::string& b = c.moe.balance;
  const double coef = c.moe.aux_coef >= 0 ? c.moe.aux_coef : m.router_aux_loss_coef;
  x.aux_coef = b == "aux_loss" || (b == "auto" && m.output_router_logits) ? float(coef) : 0.f;
  x.bias = b == "bias";
  x.bias_rate = float(c.moe.bias_rate);
  x.capacity_factor = float(c.moe.capacity_factor);
  x.P = c.expert_slices();
  x.grads_home = x.P > 1 && c.moe.grads_home;
  for (int l = 0; l < m.n_layer; ++l) x.sparse.push_back(m.sparse_layer(l) ? 1 : 0);
  x.router = n.block + "gate.weight";
  x.experts = n.block + "experts.";
  x.gate = n.gate;
  x.down = n.down;
  return s;
}

void moe_init_unit(const UnitLayout& unit, float* full, std::uint64_t seed, int n_layer, Family f) {
  const float resid_std = 0.02f / std::sqrt(2.0f * n_layer);
  const std::string& down = names(f).down;
  for (const auto& t : unit.tensors) {
    float* p = full + t.offset;
    if (t.shape.size() == 1) {  // the norms
      for (std::int64_t i = 0; i < t.numel; ++i) p[i] = 1.f;
      continue;
    }
    const bool resid = ends_with(t.name, "o_proj.weight") || ends_with(t.name, "mlp.down_proj.weight") ||
                       ends_with(t.name, down);
    const float std = resid ? resid_std : 0.02f;
    const std::uint64_t key = tensor_stream(seed, t.name);
    for (std::int64_t i = 0; i < t.numel; ++i) p[i] = std * normal_at(key, i);
  }
}

int sparse_layers(const ModelConfig& m) {
  int n = 0;
  for (int l = 0; l < m.n_layer; ++l) n += m.sparse_layer(l) ? 1 : 0;
  return n;
}

std::int64_t active_params(const ModelConfig& m) {
  const std::int64_t idle = std::int64_t(m.n_experts - m.experts_per_token) * 3 * m.n_embd * m.moe_ffn();
  return total_numel(moe_units(m, ModelChoices{}, m.arch == "mixtral" ? Family::Mixtral : Family::Qwen3Moe)) -
         sparse_layers(m) * idle;
}

}  // namespace fsdp::moe
