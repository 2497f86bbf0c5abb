// SPDX-License-Identifier: MIT
// GPT-2's parameters as sharding units: the embedding unit (wte, wpe; wte is also the LM head),
// one unit per block (or two: fsdp.unit = sublayer), and the final LayerNorm. Names and shapes
// are Hugging Face GPT-2's (Conv1D weights input-major).
#pragma once
#include <cstdint>
#include <vector>

#include "model/decoder/block_spec.hpp"
#include "model/model_config.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// The skeleton's description of GPT-2 (model/decoder/block_spec.hpp): LayerNorms, learned
// positions, Conv1D weights with biases, a GELU MLP of 4C, H heads of C / H.
BlockSpec gpt2_block_spec(const ModelConfig& m);

// [embedding, h.0 .. h.{L-1}, ln_f], or with c.sublayer_units
// [embedding, h.0.attn, h.0.mlp, ..., ln_f].
std::vector<UnitLayout> gpt2_units(const ModelConfig& m, const ModelChoices& c = {});

// GPT-2 initialisation of one unit's full flat buffer: N(0, 0.02) weights, the residual
// projections scaled by 1/sqrt(2L), zero biases, unit LayerNorm gains.
void gpt2_init_unit(const UnitLayout& unit, float* full, std::uint64_t seed, int n_layer);

}  // namespace fsdp
