// SPDX-License-Identifier: MIT
#include "model/llama/llama_arch.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "model/attention_path.hpp"
#include "model/decoder/skeleton_units.hpp"
#include "model/llama/hf_config.hpp"
#include "model/llama/llama_layout.hpp"
#include "model/model_keys.hpp"

namespace fsdp::llama {
namespace {

// Model FLOPs as torchtitan counts them: a GEMM costs 2 x its weights per token forward and
// twice that backward; attention 4T(HD) forward per layer and token (QK^T and PV; HD = C unless
// head_dim says otherwise), 8T(HD) backward. The embedding's lookup is free; the head is a GEMM
// on [V, C] whether tied or not. Summed: 6(P - VC if untied) + 12LT(HD) per token. (The q/k
// norms' few weights count as GEMM weights: 2D of P, noise.) The sum of what the layers declare
// stage by stage (DecoderSkeleton::unit_flops and head_flops).

double flops_per_token(const ModelConfig& m, bool qk_norm) {
  const double P = double(total_numel(llama_units(m, ModelChoices{}, qk_norm)));
  const double embedding = m.tie_embeddings ? 0.0 : double(m.vocab_size) * m.n_embd;
  return 6.0 * (P - embedding) +
         12.0 * m.n_layer * double(m.block_size) * double(m.n_head) * m.head_dim();
}

// ---- Hugging Face LlamaForCausalLM ----------------------------------------------------------

nlohmann::ordered_json rope_scaling_json(const ModelConfig& m) {
  if (m.rope_scaling != "llama3") return nullptr;
  return {{"rope_type", "llama3"},
          {"factor", m.rope_factor},
          {"low_freq_factor", m.rope_low_freq_factor},
          {"high_freq_factor", m.rope_high_freq_factor},
          {"original_max_position_embeddings", m.rope_original_context}};
}

}  // namespace

// What the skeleton allocates for this family (all persistent), in elements: the rotary table
// TD; the residual stream (L+1)BTC; per layer (x L, or x 1 with checkpointing) ln1, res2, ln2
// (BTC each), the attention's output BT*QW (QW = H D), the two norms' rstd (BT each), q|k|v
// BT*QKV, gate|up 2BTF, the SwiGLU output BTF, the attention probabilities BHT^2 (fused: the
// log-sum-exps BHT) and, with q/k norms, their inputs BT(H+KV)D and rstd BT(H+KV); once the
// final norm (BTC + BT), logits BTV, losses BT, the backward scratch (five BTC, d_atty BT*QW,
// d_qkv BT*QKV, d_gate_up 2BTF, d_swiglu BTF) and, materialised, the attention backward's work.
std::int64_t activation_elements(const ModelConfig& m, const ModelChoices& c, int micro_batch,
                                 bool qk_norm) {
  const bool fused = architecture_attention(m, c) == AttentionPath::Fused;
  const bool checkpointing = c.checkpoint_blocks;
  const std::int64_t B = micro_batch, T = m.block_size, C = m.n_embd, H = m.n_head,
                     KV = m.kv_heads(), D = m.head_dim(), V = m.vocab_size, L = m.n_layer,
                     F = m.ffn_hidden, QKV = llama_qkv_rows(m), QW = H * D;
  const std::int64_t BT = B * T, BTC = BT * C;
  const std::int64_t att = fused ? B * H * T : B * H * T * T;
  const std::int64_t qk = qk_norm ? BT * (H + KV) * (D + 1) : 0;
  const std::int64_t per_layer = 3 * BTC + BT * QW + 2 * BT + BT * QKV + 3 * BT * F + att + qk;
  const std::int64_t layers = checkpointing ? 1 : L;
  const std::int64_t once = BTC + BT + BT * V + BT + 5 * BTC + BT * QW + BT * QKV + 3 * BT * F +
                            (fused ? 0 : kernels::attention_work_size(int(T), int(H)));
  const std::int64_t mid = checkpointing && c.sublayer_units ? L * BTC : 0;
  const std::int64_t rope = T * D;
  return rope + (L + 1) * BTC + layers * per_layer + once + mid;
}

// Qwen3ForCausalLM's config is LlamaForCausalLM's with its own names, no mlp_bias, and the
// sliding window (which this model does not compute) off.
nlohmann::ordered_json hf_config_object(const ModelConfig& m, const std::string& torch_dtype,
                                        bool qk_norm) {
  nlohmann::ordered_json j{{"architectures", {qk_norm ? "Qwen3ForCausalLM" : "LlamaForCausalLM"}},
                           {"model_type", qk_norm ? "qwen3" : "llama"},
                           {"vocab_size", m.vocab_size},
                           {"hidden_size", m.n_embd},
                           {"intermediate_size", m.ffn_hidden},
                           {"num_hidden_layers", m.n_layer},
                           {"num_attention_heads", m.n_head},
                           {"num_key_value_heads", m.kv_heads()},
                           {"head_dim", m.head_dim()},
                           {"hidden_act", "silu"},
                           {"max_position_embeddings", m.positions()},
                           {"rms_norm_eps", m.norm_eps},
                           {"rope_theta", m.rope_theta},
                           {"rope_scaling", rope_scaling_json(m)},
                           {"attention_bias", false},
                           {"mlp_bias", false},
                           {"initializer_range", 0.02},
                           {"tie_word_embeddings", m.tie_embeddings},
                           {"use_cache", true},
                           {"torch_dtype", torch_dtype}};
  if (qk_norm) {
    j.erase("mlp_bias");
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
  }
  return j;
}

namespace {

// Hugging Face's LlamaConfig default for a config.json without max_position_embeddings.
constexpr long long kHfMaxPositions = 2048;

// rope_theta and rope_scaling (transformers up to 4.x), or rope_parameters (5.x) holding both.
void read_rope(const ConfigReader& r, ModelConfig& s) {
  const nlohmann::json& j = r.json();
  const bool params = j.contains("rope_parameters") && j["rope_parameters"].is_object();
  const nlohmann::json& src = params ? j["rope_parameters"] : j;
  s.rope_theta = r.number(src, "rope_theta", 10000.0, 1.0, 1e12);
  if (!(s.rope_theta > 1.0)) r.fail("rope_theta", num(s.rope_theta) + " is not above 1");
  const nlohmann::json* sc = params ? &j["rope_parameters"]
                                    : (j.contains("rope_scaling") ? &j["rope_scaling"] : nullptr);
  if (!sc || sc->is_null()) return;
  if (!sc->is_object()) r.fail("rope_scaling", "not an object or null");
  std::string type = "default";
  for (const char* k : {"rope_type", "type"}) {
    if (!sc->contains(k)) continue;
    if (!(*sc)[k].is_string()) r.fail(std::string("rope_scaling.") + k, "not a string");
    type = (*sc)[k].get<std::string>();
  }
  if (type == "default") return;
  if (type != "llama3")
    r.fail("rope_scaling", "rope_type " + quoted_line(type) + " is not one this model computes (default, llama3)");
  // The ranges are the deck keys' (model.rope_*), so a file cannot hold what a deck may not.
  s.rope_scaling = "llama3";
  s.rope_factor = r.number(*sc, "factor", 0.0, 1.0, 1e6);
  s.rope_low_freq_factor = r.number(*sc, "low_freq_factor", 0.0, 1e-6, 1e6);
  s.rope_high_freq_factor = r.number(*sc, "high_freq_factor", 0.0, 1e-6, 1e6);
  s.rope_original_context = int(r.integer_in(*sc, "original_max_position_embeddings", 1, 1 << 24, 0));
  if (!(s.rope_factor >= 1.0)) r.fail("rope_scaling", "factor missing or below 1");
  if (!(s.rope_low_freq_factor > 0.0) || !(s.rope_high_freq_factor > s.rope_low_freq_factor))
    r.fail("rope_scaling", "low_freq_factor and high_freq_factor must satisfy 0 < low < high");
  if (s.rope_original_context < 1) r.fail("rope_scaling", "original_max_position_embeddings missing");
}

const std::vector<std::int64_t>* matrix(const TensorShapes& t, const std::string& name,
                                        const std::string& file) {
  const auto* s = t(name);
  if (!s || s->size() != 2) throw std::invalid_argument(file + ": " + name + ": missing or not 2-D");
  return s;
}

// A 1-D tensor of n elements (the q/k norms), or one line naming it.
void vector_of(const TensorShapes& t, const std::string& name, std::int64_t n, const std::string& file) {
  const auto* s = t(name);
  if (!s || s->size() != 1 || (*s)[0] != n)
    throw std::invalid_argument(file + ": " + name + ": " + (s ? "shape not [" : "missing, expected [") +
                                std::to_string(n) + "] (head_dim)");
}

}  // namespace

ModelConfig read_common_shape(const TensorShapes& tensors, const std::string& file,
                              const nlohmann::json* config, const std::string& config_path,
                              bool qk_norm, const std::string& family) {
  if (!config)
    throw std::invalid_argument(file + ": a " + family +
                                "'s config.json is missing (its head counts, rotary and norm "
                                "settings are not in the tensors)");
  const auto* emb = matrix(tensors, "model.embed_tokens.weight", file);
  ModelConfig s;
  s.arch = qk_norm ? "qwen3" : "llama";
  s.vocab_size = int((*emb)[0]);
  s.n_embd = int((*emb)[1]);
  s.n_layer = 0;
  while (tensors("model.layers." + std::to_string(s.n_layer) + ".input_layernorm.weight")) ++s.n_layer;
  const ConfigReader r(*config, config_path);
  r.agrees("hidden_size", s.n_embd, file, true);
  r.agrees("vocab_size", s.vocab_size, file, true);
  r.agrees("num_hidden_layers", s.n_layer, file, true);
  const long long H = r.integer("num_attention_heads", true);
  if (H < 1 || H > (1 << 16)) r.fail("num_attention_heads", std::to_string(H) + " is not in [1, 65536]");
  s.n_head = int(H);
  const long long KV = r.has("num_key_value_heads") ? r.integer("num_key_value_heads", true) : H;
  if (KV < 1 || H % KV != 0)
    r.fail("num_key_value_heads", std::to_string(KV) + " does not divide num_attention_heads " + std::to_string(H));
  s.n_kv_head = int(KV);
  // head_dim: Hugging Face's default is hidden_size / num_attention_heads; Qwen3 sets its own.
  if (r.has("head_dim")) {
    const long long hd = r.integer_in(r.json(), "head_dim", 1, 1 << 16, 0);
    if (s.n_embd % H != 0 || hd != s.n_embd / H) s.head_size = int(hd);
  } else if (s.n_embd % H != 0) {
    r.fail("num_attention_heads", std::to_string(H) + " does not divide hidden_size " + std::to_string(s.n_embd) +
                                      " and no head_dim is given");
  }
  if (s.head_dim() % 2 != 0)
    r.fail(r.has("head_dim") ? "head_dim" : "num_attention_heads",
           "the head size " + std::to_string(s.head_dim()) + " is odd (the rotation pairs halves)");
  if (s.n_layer > 0) {
    const std::int64_t D = s.head_dim();
    const auto* q = matrix(tensors, "model.layers.0.self_attn.q_proj.weight", file);
    if ((*q)[0] != H * D)
      throw std::invalid_argument(file + ": model.layers.0.self_attn.q_proj.weight: " + std::to_string((*q)[0]) +
                                  " rows, but num_attention_heads " + std::to_string(H) + " x head size " +
                                  std::to_string(D) + " in " + config_path);
    const auto* k = matrix(tensors, "model.layers.0.self_attn.k_proj.weight", file);
    if ((*k)[0] != KV * D)
      throw std::invalid_argument(file + ": model.layers.0.self_attn.k_proj.weight: " + std::to_string((*k)[0]) +
                                  " rows, but num_key_value_heads " + std::to_string(KV) + " x head size " +
                                  std::to_string(D) + " in " + config_path);
    if (qk_norm)
      for (const char* n : {"q_norm", "k_norm"})
        vector_of(tensors, std::string("model.layers.0.self_attn.") + n + ".weight", D, file);
    else if (tensors("model.layers.0.self_attn.q_norm.weight"))
      throw std::invalid_argument(file + ": model.layers.0.self_attn.q_norm.weight: a Qwen3 tensor, but " +
                                  config_path + " names no Qwen3ForCausalLM");
  }
  const nlohmann::json& j = *config;
  // Missing: Hugging Face's LlamaConfig default, 2048. The range is model.n_positions' own.
  s.n_positions = int(r.integer_in(j, "max_position_embeddings", 1, 1 << 24, kHfMaxPositions));
  s.norm_eps = r.number(j, "rms_norm_eps", 1e-6, 1e-12, 0.1);
  read_rope(r, s);
  // Qwen3's sliding window (on in no published Qwen3 model) is a different attention.
  if (j.contains("use_sliding_window") && j["use_sliding_window"] == true)
    r.fail("use_sliding_window", "true, but this model computes full causal attention");
  for (const char* k : {"attention_bias", "mlp_bias"})
    if (j.contains(k) && j[k] == true) r.fail(k, "true, but this model has no biases");
  if (j.contains("hidden_act") && j["hidden_act"].is_string() && j["hidden_act"] != "silu")
    r.fail("hidden_act", quoted_line(j["hidden_act"].get<std::string>()) + ", but this model computes SwiGLU with silu");
  const bool tied_key = j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean();
  const bool has_head = tensors("lm_head.weight") != nullptr;
  // Hugging Face's default is tied; a file with an lm_head and no key says untied.
  s.tie_embeddings = tied_key ? j["tie_word_embeddings"].get<bool>() : !has_head;
  if (!s.tie_embeddings && !has_head)
    throw std::invalid_argument(file + ": lm_head.weight: missing, but " + config_path +
                                " says tie_word_embeddings false");
  return s;
}

namespace {

ModelConfig read_shape(const TensorShapes& tensors, const std::string& file,
                       const nlohmann::json* config, const std::string& config_path, bool qk_norm) {
  ModelConfig s = read_common_shape(tensors, file, config, config_path, qk_norm, qk_norm ? "Qwen3" : "Llama");
  const ConfigReader r(*config, config_path);
  if (s.n_layer > 0) {
    const auto* gate = matrix(tensors, "model.layers.0.mlp.gate_proj.weight", file);
    s.ffn_hidden = int((*gate)[0]);
    r.agrees("intermediate_size", s.ffn_hidden, file, true);
  } else {
    s.ffn_hidden = int(r.integer("intermediate_size", true));
  }
  return s;
}

// ---- The deck's rules for model.arch = "llama" ----------------------------------------------

}  // namespace

std::vector<ArchCheck> family_checks() {
  return {
      {"model.n_kv_head", "model.n_head",
       [](const ModelConfig& m) -> std::string {
         if (m.kv_heads() <= m.n_head && m.n_head % m.kv_heads() == 0) return "";
         return "expected a divisor of model.n_head = " + std::to_string(m.n_head) +
                " (each key/value head serves n_head / n_kv_head query heads), got " +
                std::to_string(m.n_kv_head);
       }},
      {"model.n_head", "model.n_embd",
       [](const ModelConfig& m) -> std::string {
         if (m.head_size > 0 || m.n_embd % m.n_head != 0 || m.head_dim() % 2 == 0) return "";
         return "the head size n_embd / n_head = " + std::to_string(m.head_dim()) +
                " is odd; the rotary embedding rotates its two halves as pairs";
       }},
      {"model.head_dim", "model.arch",
       [](const ModelConfig& m) -> std::string {
         if (m.head_size == 0 || m.head_size % 2 == 0) return "";
         return "expected an even head size (the rotary embedding rotates its two halves as "
                "pairs), got " + std::to_string(m.head_size);
       }},
      {"model.ffn_hidden", "model.arch",
       [](const ModelConfig& m) -> std::string {
         if (m.ffn_hidden > 0) return "";
         return "expected the MLP's hidden width (Hugging Face's intermediate_size) for model.arch "
                "= \"" + m.arch + "\", got " + std::to_string(m.ffn_hidden);
       }},
      {"model.rope_high_freq_factor", "model.rope_low_freq_factor",
       [](const ModelConfig& m) -> std::string {
         if (m.rope_scaling != "llama3" || m.rope_high_freq_factor > m.rope_low_freq_factor) return "";
         return "expected more than model.rope_low_freq_factor = " + num(m.rope_low_freq_factor) +
                " with rope_scaling = \"llama3\", got " + num(m.rope_high_freq_factor);
       }},
  };
}


// Tied: the embedding unit's table; untied: lm_head, in the last unit with the final norm.
int head_unit(const ModelConfig& m, const ModelChoices& c) {
  return m.tie_embeddings ? 0 : 1 + m.n_layer * (c.sublayer_units ? 2 : 1);
}

AttentionPath architecture_attention(const ModelConfig& m, const ModelChoices& c) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  // The GPU's materialised kernel reads GPT-2's packed layout only (and GPUs want fused anyway).
  if (m.kv_heads() < m.n_head) return AttentionPath::Fused;
#endif
  return resolve_attention(c.attention, m.block_size);
}

Architecture family_architecture(bool qk_norm) {
  Architecture a;
  a.name = qk_norm ? "qwen3" : "llama";
  a.family = qk_norm ? "Qwen3" : "Llama";
  a.units = [qk_norm](const ModelConfig& m, const ModelChoices& c) {
    return llama_units(m, c, qk_norm);
  };
  a.init_unit = [](const ModelConfig& m, const UnitLayout& u, float* full, std::uint64_t seed) {
    llama_init_unit(u, full, seed, m.n_layer);
  };
  a.head_unit = head_unit;
  a.build = [qk_norm](const ModelConfig& m, const DecoderOptions& o, MemoryTracker& tracker) {
    return build_skeleton(m, llama_block_spec(m, qk_norm), llama_units(m, o.choices, qk_norm),
                          head_unit(m, o.choices), architecture_attention(m, o.choices), o, tracker);
  };
  a.attention = architecture_attention;
  a.activation_elements = [qk_norm](const ModelConfig& m, const ModelChoices& c, int B) {
    return activation_elements(m, c, B, qk_norm);
  };
  a.bf16_scratch_elements = [qk_norm](const ModelConfig& m, int B) {
    return skeleton_bf16_scratch_elements(llama_block_spec(m, qk_norm), m, B);
  };
  a.flops_per_token = [qk_norm](const ModelConfig& m) { return flops_per_token(m, qk_norm); };
  a.flops_formula = "6(P - VC if untied) + 12LTC (T = block_size)";
  a.recompute_formula = "each layer's forward (2P_layer + 4TC)";
  if (qk_norm) {
    a.flops_formula = "6(P - VC if untied) + 12LT(HD) (T = block_size, D = head_dim)";
    a.recompute_formula = "each layer's forward (2P_layer + 4T(HD))";
  }
  a.hf.architectures = qk_norm ? "Qwen3ForCausalLM" : "LlamaForCausalLM";
  a.hf.config_json = [qk_norm](const ModelConfig& m, const std::string& dtype) {
    return hf_config_object(m, dtype, qk_norm).dump(2) + "\n";
  };
  // Both read model.embed_tokens; the q/k norms tell a Qwen3 file without config.json's name,
  // and a router in any layer a mixture of experts (model/moe/moe_arch.cpp).
  a.hf.recognizes = [qk_norm](const TensorShapes& t) {
    if (!t("model.embed_tokens.weight") ||
        (t("model.layers.0.self_attn.q_norm.weight") != nullptr) != qk_norm)
      return false;
    for (int l = 0; t("model.layers." + std::to_string(l) + ".input_layernorm.weight"); ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      if (t(p + "mlp.gate.weight") || t(p + "block_sparse_moe.gate.weight")) return false;
    }
    return true;
  };
  a.hf.read_shape = [qk_norm](const TensorShapes& t, const std::string& file,
                              const nlohmann::json* config, const std::string& config_path) {
    return read_shape(t, file, config, config_path, qk_norm);
  };
  a.hf.stored_names = [](const std::string& name) { return std::vector<std::string>{name}; };
  a.hf.config_complete = true;
  a.checks = family_checks();
  for (const ModelKey& k : model_keys())
    if (!k.experts) a.keys.push_back(k.key);
  a.checks.push_back(no_experts_check(a.family));
  return a;
}

Architecture architecture() { return family_architecture(false); }

}  // namespace fsdp::llama
