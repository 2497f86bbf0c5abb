// SPDX-License-Identifier: MIT
// GPT-2's parameters as sharding units: the embedding unit (wte, wpe; wte is also the LM head),
// one unit per block (or two: fsdp.unit = sublayer), and the final LayerNorm. Names and shapes
// are Hugging Face GPT-2's (Conv1D weights input-major).
#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// What a GPT-2 unit holds (UnitLayout::kind). A sub-layer unit is half a block with its
// pre-LayerNorm: Attn holds ln_1 and attn.*, Mlp holds ln_2 and mlp.*.
enum Gpt2Unit : int { kGpt2Embedding, kGpt2Block, kGpt2Attn, kGpt2Mlp, kGpt2LnF };

// Offsets of a block's tensors, in declaration order: the first six inside the unit that holds
// the attention sub-layer, the last six inside the one that holds the MLP (the same unit when
// the block is one unit).
struct BlockOffsets {
  std::int64_t ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w,
      fcproj_b;
};
BlockOffsets block_offsets(const UnitLayout& attn, const UnitLayout& mlp);

// [embedding, h.0 .. h.{L-1}, ln_f], or with m.sublayer_units
// [embedding, h.0.attn, h.0.mlp, ..., ln_f].
std::vector<UnitLayout> gpt2_units(const ModelConfig& m);

// GPT-2 initialisation of one unit's full flat buffer: N(0, 0.02) weights, the residual
// projections scaled by 1/sqrt(2L), zero biases, unit LayerNorm gains.
void gpt2_init_unit(const UnitLayout& unit, float* full, std::uint64_t seed, int n_layer);

}  // namespace fsdp
