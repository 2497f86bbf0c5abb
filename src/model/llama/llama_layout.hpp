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

#include "model/model_config.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// What a Llama unit holds (UnitLayout::kind). Attn: input_layernorm and self_attn.*; Mlp:
// post_attention_layernorm and mlp.*; Norm: model.norm (and lm_head when untied).
enum LlamaUnit : int { kLlamaEmbedding, kLlamaBlock, kLlamaAttn, kLlamaMlp, kLlamaNorm };

// A layer's tensors as offsets into the unit(s) holding them: the first four in the
// attention's unit, the last three in the MLP's (the same unit when the layer is one).
struct LlamaOffsets {
  std::int64_t attn_norm, qkv, o, mlp_norm, gate_up, down;
};
LlamaOffsets llama_offsets(const UnitLayout& attn, const UnitLayout& mlp);

// Widths: q rows H*D (= C), k and v rows KV*D each; the MLP's F = m.ffn_hidden.
inline std::int64_t llama_qkv_rows(const ModelConfig& m) {
  return std::int64_t(m.n_embd) + 2 * std::int64_t(m.kv_heads()) * m.head_dim();
}

std::vector<UnitLayout> llama_units(const ModelConfig& m);

// Hugging Face's LlamaPreTrainedModel initialisation: N(0, 0.02) for every matrix, with the
// residual projections (o_proj, down_proj) scaled by 1/sqrt(2L) as GPT-2 does (the stream's
// variance stays level with depth); unit norm weights. Counter-based (model/counter_init.hpp).
void llama_init_unit(const UnitLayout& unit, float* full, std::uint64_t seed, int n_layer);

}  // namespace fsdp
