// SPDX-License-Identifier: MIT
// One layer of the skeleton as the layers that compute it, each built at the offsets of its
// tensors in the unit(s) holding the layer (the attention's in its unit, the MLP's in its: the
// same unit unless fsdp.unit = sublayer; a placed unit's parts move them). Which kind of linear
// each projection is gets decided here, once, for the whole model.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/decoder/block_spec.hpp"
#include "model/layers/linear_layer.hpp"
#include "model/layers/norm_layer.hpp"

namespace fsdp {

// Each expert's gate | up [2F, C] and down [C, F], by expert (model/experts/experts.hpp computes
// them grouped: each expert's rows are a different count each step).
struct ExpertOffsets {
  std::vector<std::int64_t> gate_up, down;
};

struct DecoderLayer {
  Norm attn_norm, mlp_norm;
  // Attention: one GEMM for q | k | v (adjacent tensors), Qwen3's per-head q and k norms
  // (weights [D] each, -1: none) and the output projection, whose bias the residual add adds.
  std::unique_ptr<LinearLayer> qkv, o;
  std::int64_t q_norm = -1, k_norm = -1;
  // A dense layer's MLP: up (gate | up for SwiGLU; its bias added by the GELU) and down (its bias
  // added by the residual add). Null on a sparse layer.
  std::unique_ptr<LinearLayer> up, down;
  // A sparse layer's router [E, C] (fp32 whatever the GEMMs' dtype) and its experts.
  std::unique_ptr<Linear> router;
  ExpertOffsets experts;

  // Model FLOPs of the attention sub-layer's norm and projections (the attention core between
  // them is the skeleton's: AttentionCore::flops) and of the MLP sub-layer (a sparse one: the
  // router and the K experts a row is sent to), for `rows` rows.
  LayerFlops attention_flops(std::int64_t rows, const BlockSpec& s) const;
  LayerFlops mlp_flops(std::int64_t rows, int C, const BlockSpec& s) const;
};

// The offset of unit u's tensor named ...suffix (-1 for an empty suffix: the architecture has
// none), and of the bias beside the weight ...weight ("...weight" -> "...bias").
std::int64_t offset_of(const UnitLayout& u, const std::string& suffix);
std::int64_t bias_offset_of(const UnitLayout& u, const std::string& weight);

// A LoRA run's adapters as the layers compute them: their scale and the skeleton's scratch
// (model/layers/adapted_linear.hpp).
struct AdapterRun {
  float scale = 0.f;
  Mat h, dh;
};

// Layer l of `units` as spec s describes it; C: the model's width. A projection with adapters
// in its unit is an AdaptedLinear (lora: their scale and scratch), a frozen tensor's layer
// computes no gradient of it.
DecoderLayer decoder_layer(const std::vector<UnitLayout>& units, const BlockSpec& s, int C, int l,
                           const AdapterRun& lora = {});

}  // namespace fsdp
