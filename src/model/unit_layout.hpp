// SPDX-License-Identifier: MIT
// A model's parameters as sharding units: each unit is one flat buffer, its tensors offsets
// into it. The architecture (model/architecture.hpp) lists them; the engine shards, gathers,
// checkpoints and exports them by these names and shapes without knowing what they compute.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fsdp {

struct TensorSpec {
  std::string name;  // the checkpoint's dataset name, e.g. "h.0.mlp.c_proj.weight"
  std::vector<std::int64_t> shape;
  std::int64_t offset = 0;  // into the unit's flat buffer
  std::int64_t numel = 0;
  bool decay = false;  // AdamW weight decay applies
  bool gemm = false;   // a GEMM operand: bf16 runs widen or cast it one weight at a time
  // A hidden matrix (attention, MLP, expert weights; not an embedding, a head, a norm or a bias):
  // train.optimizer = muon orthogonalises its update (fsdp/optim/muon.hpp).
  bool hidden = false;
  bool in_major = false;  // a 2-D weight stored [in, out] (GPT-2's Conv1D); else [out, in]
  // Which of the architecture's placements (Architecture::placements) holds it: the tensors of
  // a unit that share one form one *part*, a flat buffer with its own shard and replicate
  // groups (fsdp/part_layout.hpp).
  int part = 0;
  // Trained (gradient, reduction, optimizer state) or frozen (an adapter run's base: gathered
  // and computed with only). A unit's frozen tensors sit in parts before its trained ones.
  bool trainable = true;
};

// train.optimizer = muon takes this tensor (a hidden 2-D matrix); AdamW takes every other.
inline bool muon_matrix(const TensorSpec& t) { return t.hidden && t.shape.size() == 2; }
// Its (out, in) as a linear map, whichever way it is stored.
inline std::int64_t fan_out(const TensorSpec& t) { return t.shape[t.in_major ? 1 : 0]; }
inline std::int64_t fan_in(const TensorSpec& t) { return t.shape[t.in_major ? 0 : 1]; }

struct UnitLayout {
  std::string name;  // e.g. "embedding", "h.3", "h.3.attn"
  int kind = 0;      // what the unit holds, in the architecture's own terms
  int layer = -1;    // the block's index, for units inside a block
  std::vector<TensorSpec> tensors;
  std::int64_t numel = 0;
  // By name suffix, e.g. "ln_1.weight"; throws std::out_of_range naming the unit.
  const TensorSpec& tensor(const std::string& suffix) const;
};

// Appends a tensor at the end of u's flat buffer, in placement `part`.
void add_tensor(UnitLayout& u, const std::string& name, std::vector<std::int64_t> shape,
                bool decay, bool gemm, int part = 0);

// fsdp.unit: a block is one unit, or two (its attention and its MLP sub-layers).
enum class UnitCut { Block, Sublayer };
UnitCut unit_cut(const std::string& fsdp_unit);  // "block" | "sublayer"

std::int64_t total_numel(const std::vector<UnitLayout>& units);

// Where unit u's gradient buffer starts in its flat buffer: its first trained tensor (0 where
// every tensor is trained; an adapter run's base parts come first and have none), u.numel where
// none is.
std::int64_t grad_origin(const UnitLayout& u);

// Whether tensor name s ends with suf (e.g. "attn.c_proj.weight"): how layouts pick tensors.
bool ends_with(const std::string& s, const std::string& suf);

}  // namespace fsdp
