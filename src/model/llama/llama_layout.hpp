// SPDX-License-Identifier: MIT
// Llama's parameters as sharding units, under Hugging Face LlamaForCausalLM's names and
// nn.Linear layouts ([out, in]): the embedding unit (model.embed_tokens, also the LM head when
// tied), one unit per decoder layer (or two: fsdp.unit = sublayer), and the final unit
// (model.norm, and lm_head when the head is untied). No biases.
//
// Inside a layer, q_proj, k_proj and v_proj are stored next to each other, and so are
// gate_proj and up_proj: each group is one [rows, C] matrix that one GEMM reads (the input is
// read once for all three projections, and once for the gate and the up projection).
#pragma once
#include <cstdint>
#include <vector>

#include "model/decoder/block_spec.hpp"
#include "model/decoder/skeleton_units.hpp"
#include "model/model_config.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// Widths: q rows H*D (C unless model.head_dim says otherwise), k and v rows KV*D each; the
// MLP's F = m.ffn_hidden.
inline std::int64_t llama_qkv_rows(const ModelConfig& m) {
  return (std::int64_t(m.n_head) + 2 * std::int64_t(m.kv_heads())) * m.head_dim();
}

// qk_norm (Qwen3): each layer also holds self_attn.q_norm and self_attn.k_norm [D], after
// o_proj.
// sparse_mlp: the tensors of a layer with experts (model/moe/moe_layout.hpp), called for the
// layers m.sparse_layer names; the others get Llama's MLP.
std::vector<UnitLayout> llama_units(const ModelConfig& m, const ModelChoices& c = {},
                                    bool qk_norm = false,
                                    const AddLayerTensors& sparse_mlp = nullptr);
// A Llama tensor: matrices decay and are GEMM operands, hidden except the embedding and head.
void add_llama_tensor(UnitLayout& u, const std::string& name, std::vector<std::int64_t> shape);

// The skeleton's description (model/decoder/block_spec.hpp): RMSNorms, rotary positions,
// nn.Linear weights without biases, grouped-query heads of m.head_dim(), SwiGLU of F.
BlockSpec llama_block_spec(const ModelConfig& m, bool qk_norm = false);

// Hugging Face's LlamaPreTrainedModel initialisation: N(0, 0.02) for every matrix, with the
// residual projections (o_proj, down_proj) scaled by 1/sqrt(2L) as GPT-2 does (the stream's
// variance stays level with depth); unit norm weights. Counter-based (model/counter_init.hpp).
void llama_init_unit(const UnitLayout& unit, float* full, std::uint64_t seed, int n_layer);

}  // namespace fsdp
