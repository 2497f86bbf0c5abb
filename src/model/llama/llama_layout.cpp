// SPDX-License-Identifier: MIT
#include "model/llama/llama_layout.hpp"

#include <cmath>

#include "model/counter_init.hpp"
#include "model/decoder/skeleton_units.hpp"

namespace fsdp {
// Every matrix is a GEMM operand (the embedding's lookup reads it as one too) and decays;
// the norm weights neither. The matrices inside a block are its hidden ones.
void add_llama_tensor(UnitLayout& u, const std::string& name, std::vector<std::int64_t> shape) {
  const bool matrix = shape.size() == 2;
  add_tensor(u, name, std::move(shape), matrix, matrix);
  u.tensors.back().hidden = matrix && name != "model.embed_tokens.weight" && name != "lm_head.weight";
}

namespace {
void add(UnitLayout& u, const std::string& name, std::vector<std::int64_t> shape) {
  add_llama_tensor(u, name, std::move(shape));
}
}  // namespace

BlockSpec llama_block_spec(const ModelConfig& m, bool qk_norm) {
  BlockSpec s;
  s.tag = qk_norm ? "qwen3" : "llama";
  s.norm = NormKind::RMSNorm;
  s.eps = float(m.norm_eps);
  s.positions = Positions::Rotary;
  s.qk_norm = qk_norm;
  s.mlp = MlpKind::SwiGlu;
  s.H = m.n_head;
  s.KV = m.kv_heads();
  s.D = m.head_dim();
  s.F = m.ffn_hidden;
  s.attn_norm = "input_layernorm.weight";
  s.qkv = "self_attn.q_proj.weight";
  s.q_norm = "self_attn.q_norm.weight";
  s.k_norm = "self_attn.k_norm.weight";
  s.o = "self_attn.o_proj.weight";
  s.mlp_norm = "post_attention_layernorm.weight";
  s.up = "mlp.gate_proj.weight";
  s.down = "mlp.down_proj.weight";
  s.embedding = "model.embed_tokens.weight";
  s.final_norm = "model.norm.weight";
  s.head = "lm_head.weight";
  return s;
}

std::vector<UnitLayout> llama_units(const ModelConfig& m, const ModelChoices& c, bool qk_norm,
                                    const AddLayerTensors& sparse_mlp) {
  const std::int64_t C = m.n_embd, V = m.vocab_size, F = m.ffn_hidden, D = m.head_dim(),
                     QD = std::int64_t(m.n_head) * D, KVD = std::int64_t(m.kv_heads()) * D;
  UnitLayout emb, fin;
  emb.name = "embedding";
  add(emb, "model.embed_tokens.weight", {V, C});
  fin.name = "norm";
  add(fin, "model.norm.weight", {C});
  if (!m.tie_embeddings) add(fin, "lm_head.weight", {V, C});
  return skeleton_units(
      m, c, std::move(emb), [](int l) { return "model.layers." + std::to_string(l) + "."; },
      "self_attn",
      [=](UnitLayout& a, const std::string& p) {
        add(a, p + "input_layernorm.weight", {C});
        add(a, p + "self_attn.q_proj.weight", {QD, C});  // adjacent: one [(H + 2 KV) D, C] GEMM
        add(a, p + "self_attn.k_proj.weight", {KVD, C});
        add(a, p + "self_attn.v_proj.weight", {KVD, C});
        add(a, p + "self_attn.o_proj.weight", {C, QD});
        if (qk_norm) {
          add(a, p + "self_attn.q_norm.weight", {D});
          add(a, p + "self_attn.k_norm.weight", {D});
        }
      },
      [=](UnitLayout& b, const std::string& p) {
        if (sparse_mlp && m.sparse_layer(b.layer)) return sparse_mlp(b, p);
        add(b, p + "post_attention_layernorm.weight", {C});
        add(b, p + "mlp.gate_proj.weight", {F, C});  // adjacent: one [2F, C] GEMM
        add(b, p + "mlp.up_proj.weight", {F, C});
        add(b, p + "mlp.down_proj.weight", {C, F});
      },
      std::move(fin));
}

void llama_init_unit(const UnitLayout& unit, float* full, std::uint64_t seed, int n_layer) {
  const float resid_std = 0.02f / std::sqrt(2.0f * n_layer);
  for (const auto& t : unit.tensors) {
    float* p = full + t.offset;
    if (t.shape.size() == 1) {  // the norms
      for (std::int64_t i = 0; i < t.numel; ++i) p[i] = 1.f;
      continue;
    }
    const bool resid = ends_with(t.name, "o_proj.weight") || ends_with(t.name, "down_proj.weight");
    const float std = resid ? resid_std : 0.02f;
    const std::uint64_t key = tensor_stream(seed, t.name);
    for (std::int64_t i = 0; i < t.numel; ++i) p[i] = std * normal_at(key, i);
  }
}

}  // namespace fsdp
