// SPDX-License-Identifier: MIT
// The mixtures of experts on Llama's layers, under their Hugging Face names: Qwen3-MoE
// (Qwen3MoeForCausalLM: Qwen3's attention with q/k norms; mlp.gate [E, C] and
// mlp.experts.{e}.gate_proj / up_proj [F, C], down_proj [C, F]; layers listed in mlp_only_layers
// or off decoder_sparse_step keep a dense mlp.gate_proj/up_proj/down_proj of ffn_hidden) and
// Mixtral (MixtralForCausalLM: Llama's attention; block_sparse_moe.gate and
// block_sparse_moe.experts.{e}.w1 (gate), w3 (up), w2 (down) in every layer). Each expert's gate
// and up are stored next to each other (one [2F, C] GEMM), as Llama's MLP.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/decoder/block_spec.hpp"
#include "model/model_config.hpp"
#include "model/unit_layout.hpp"

namespace fsdp::moe {

enum class Family { Qwen3Moe, Mixtral };

struct FamilyNames {
  std::string arch, family, hf_arch, model_type, block;  // block: "mlp." or "block_sparse_moe."
  std::string gate, up, down;                            // an expert's three tensors' names
  bool qk_norm = false;
};
const FamilyNames& names(Family f);

// The architectures' placements: 0 the dense tensors, 1 the experts (by_expert).
constexpr int kExpertPart = 1;
std::vector<UnitLayout> moe_units(const ModelConfig& m, const ModelChoices& c, Family f);
BlockSpec moe_block_spec(const ModelConfig& m, const ModelChoices& c, Family f);
// Llama's initialisation (N(0, 0.02), the residual projections o_proj and each expert's down
// scaled by 1/sqrt(2L), unit norms) for every tensor, the routers included.
void moe_init_unit(const UnitLayout& unit, float* full, std::uint64_t seed, int n_layer, Family f);

// Parameters one token computes with: all but the sparse layers' E - K idle experts.
std::int64_t active_params(const ModelConfig& m);
int sparse_layers(const ModelConfig& m);

}  // namespace fsdp::moe
