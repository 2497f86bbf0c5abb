// SPDX-License-Identifier: MIT
// GPT-2's parameters as sharding units: the embedding unit (wte, wpe; wte is also the LM head),
// one unit per block (or two: fsdp.unit = sublayer), and the final LayerNorm. Names and shapes
// are Hugging Face GPT-2's (Conv1D weights input-major). Each unit is one flat buffer; tensors
// are offsets into it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace fsdp {

struct TensorSpec {
  std::string name;               // Hugging Face GPT-2 name, e.g. "h.0.attn.c_attn.weight"
  std::vector<std::int64_t> shape;
  std::int64_t offset = 0;        // into the unit's flat buffer
  std::int64_t numel = 0;
  bool decay = false;             // AdamW weight decay applies to 2-D weights only
};

// What a unit holds. A sub-layer unit is half a block with its pre-LayerNorm: Attn holds ln_1
// and attn.*, Mlp holds ln_2 and mlp.*.
enum class UnitKind { Embedding, Block, Attn, Mlp, LnF };

// fsdp.unit: a block is one unit, or two. With two, the MLP's gradients (two thirds of the
// block's) are reduce-scattered while the attention's backward still runs, and the gathered
// window shrinks from two blocks to a block and a third (at prefetch 1).
enum class UnitCut { Block, Sublayer };
UnitCut unit_cut(const std::string& fsdp_unit);  // "block" | "sublayer"

struct UnitLayout {
  std::string name;  // "embedding", "h.3" (or "h.3.attn", "h.3.mlp"), "ln_f"
  UnitKind kind = UnitKind::Block;
  int layer = -1;    // the block's index, for Block, Attn and Mlp
  std::vector<TensorSpec> tensors;
  std::int64_t numel = 0;
  const TensorSpec& tensor(const std::string& suffix) const;  // by name suffix, e.g. "ln_1.weight"
};

// Offsets of a block's tensors, in declaration order: the first six inside the unit that holds
// the attention sub-layer, the last six inside the one that holds the MLP (the same unit when
// the block is one unit).
struct BlockOffsets {
  std::int64_t ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w,
      fcproj_b;
};
BlockOffsets block_offsets(const UnitLayout& attn, const UnitLayout& mlp);

// [embedding, h.0 .. h.{L-1}, ln_f], or with sub-layers [embedding, h.0.attn, h.0.mlp, ..., ln_f].
// The tensors, their names and shapes are the same either way; only the grouping differs.
std::vector<UnitLayout> gpt2_units(const ModelConfig& m, UnitCut cut = UnitCut::Block);
std::int64_t gpt2_num_params(const ModelConfig& m);

// GPT-2 initialisation of one unit's full flat buffer, counter-based per tensor so the values do
// not depend on how the units are sharded or in which order they are initialised.
void gpt2_init_unit(const UnitLayout& unit, float* full, std::uint64_t seed, int n_layer);

}  // namespace fsdp
