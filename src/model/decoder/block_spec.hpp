// SPDX-License-Identifier: MIT
// A decoder architecture as the one skeleton (model/decoder/skeleton.hpp) computes it: the
// choices that differ between GPT-2, Llama, Qwen3 and the mixtures of experts (norm, positions,
// biases, weight layout, per-head q/k norms, MLP kind, experts, head sizes) and the names of a
// layer's tensors. Everything else
// (the residual stream, the per-unit dispatch with recompute, checkpointing, the bf16 casts,
// the head and the loss) is written once, in the skeleton.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/attention_path.hpp"
#include "model/layers/norm_layer.hpp"
#include "model/model_choices.hpp"
#include "model/model_config.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// What a unit holds (UnitLayout::kind), for every architecture on the skeleton. A sub-layer
// unit (fsdp.unit = sublayer) is half a layer with its pre-norm: Attn holds the first norm and
// the attention, Mlp the second norm and the MLP. Final: the last norm (and an untied head).
enum UnitKind : int { kEmbeddingUnit, kBlockUnit, kAttnUnit, kMlpUnit, kFinalUnit };

enum class MlpKind { Gelu, SwiGlu };         // GELU: up, gelu, down; SwiGLU: gate|up, silu*, down
enum class Positions { Learned, Rotary };    // a position table in the embedding, or rotary q, k

// The sparse layers' MLP (kernels: model/experts/; architectures: model/moe/): a router [E, C] in front of E SwiGLU experts of width F,
// each token sent to K of them. Tensor names: a layer's prefix + router, and prefix + experts +
// e + gate (gate and up adjacent, one [2F, C] GEMM) and + down.
struct ExpertSpec {
  int E = 0, K = 0, F = 0;
  bool renorm = true;
  float aux_coef = 0.f;      // the load-balancing loss's weight in the objective (0: not added)
  bool bias = false;         // moe.balance = bias: a per-expert bias on the choice
  float bias_rate = 0.f;     // its change per step
  float capacity_factor = 0.f;  // > 0: each expert's capacity, ceil(f N K / E) of N tokens
  int P = 1;                 // expert parallelism: E / P experts per rank of an expert group
  bool grads_home = false;   // their weight gradients sent back to the tokens' rank
  std::vector<char> sparse;  // per layer: experts (1) or the dense MLP (0)
  std::string router, experts, gate, down;
  bool sparse_layer(int l) const { return !sparse.empty() && sparse[std::size_t(l)] != 0; }
  bool any(char kind) const { return std::find(sparse.begin(), sparse.end(), kind) != sparse.end(); }
};

struct BlockSpec {
  std::string tag;  // the activation buffers' label prefix ("gpt2")
  NormKind norm = NormKind::RMSNorm;
  float eps = 1e-5f;  // RMSNorm's (layer and q/k norms)
  Positions positions = Positions::Rotary;
  // Weights stored [in, out] (GPT-2's Conv1D) rather than nn.Linear's [out, in].
  bool input_major = false;
  // Biases on the q|k|v, output, up and down projections (GPT-2). The output and down biases are
  // added by the residual add, the up bias by the GELU: one pass less over each output.
  bool biases = false;
  bool qk_norm = false;  // Qwen3: an RMSNorm over each q and k head, before the rotation
  MlpKind mlp = MlpKind::SwiGlu;  // the dense layers'
  ExpertSpec moe;                 // the sparse layers' (none: every layer dense)
  bool any_dense() const { return moe.sparse.empty() || moe.any(0); }
  int H = 0, KV = 0, D = 0, F = 0;  // query heads, key/value heads, head size, MLP width

  // A layer's tensors by name suffix (UnitLayout::tensor); the biases are the same names
  // ending in "bias". qkv: the first of the adjacent q, k, v matrices (one GEMM reads them),
  // up: the first of gate|up for SwiGLU.
  std::string attn_norm, qkv, q_norm, k_norm, o, mlp_norm, up, down;
  std::string embedding;  // the token table, in the embedding unit
  std::string positions_table;  // the learned positions, in the embedding unit
  std::string final_norm, head;  // in the final unit; head: the untied LM head
  float adapter_scale = 0.f;     // a LoRA run's lora.alpha / r (ModelChoices::lora)
};

class Decoder;
class MemoryTracker;
struct DecoderOptions;

// The model (Architecture::build) for units cut as o.choices says; head_unit:
// Architecture::head_unit. Defined with the skeleton (model/decoder/skeleton.cpp): the only
// part of an architecture that needs the kernels (the fuzz targets link without them).
std::unique_ptr<Decoder> build_skeleton(const ModelConfig& m, const BlockSpec& s,
                                        std::vector<UnitLayout> units, int head_unit,
                                        AttentionPath attention, const DecoderOptions& o,
                                        MemoryTracker& tracker);

// Elements of each of the two bf16 cast scratches (Decoder::use_bf16_gemms; the planner counts
// the same): the widest activation a linear layer reads or writes whole, or the head's
// backward chunk of dlogits, at least 512 rows (all of them below that) so its GEMMs keep a
// full M and K.
inline std::int64_t skeleton_bf16_scratch_elements(const BlockSpec& s, const ModelConfig& m,
                                                   int micro_batch) {
  const std::int64_t BT = std::int64_t(micro_batch) * m.block_size;
  const std::int64_t up = s.mlp == MlpKind::SwiGlu ? 2 * std::int64_t(s.F) : s.F;
  const std::int64_t widest = std::max({std::int64_t(m.n_embd), up, std::int64_t(s.H + 2 * s.KV) * s.D,
                                        std::int64_t(s.H) * s.D, std::int64_t(s.F)});
  return std::max(BT * widest, std::int64_t(m.vocab_size) * std::min<std::int64_t>(BT, 512));
}

}  // namespace fsdp
