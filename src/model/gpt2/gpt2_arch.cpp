// SPDX-License-Identifier: MIT
#include "model/gpt2/gpt2_arch.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/attention_path.hpp"
#include "model/decoder/skeleton_units.hpp"
#include "model/gpt2/gpt2_layout.hpp"

namespace fsdp::gpt2 {
namespace {

// Activation elements the skeleton allocates for GPT-2 (all persistent): the residual stream
// (L+1)BTC; per block (x L, or x 1 with checkpointing) 15BTC + 4BT + BHT^2 (ln1, qkv, atty,
// res2, ln2, fch, fch_gelu, two LayerNorms' mean/rstd, the attention probabilities; fused
// attention keeps B*H*T log-sum-exps instead); and once 18BTC + 3BT + BTV + T^2 (ln_f with
// its mean/rstd, logits, losses, the backward scratch, the materialised attention backward's
// T x T work buffer).
std::int64_t activation_elements(const ModelConfig& m, const ModelChoices& c, int micro_batch) {
  const bool fused = resolve_attention(c.attention, m.block_size) == AttentionPath::Fused;
  const bool checkpointing = c.checkpoint_blocks;
  const std::int64_t B = micro_batch, T = m.block_size, C = m.n_embd, H = m.n_head,
                     V = m.vocab_size, L = m.n_layer;
  const std::int64_t BT = B * T, BTC = BT * C;
  // BlockActivations: ln1, atty, res2, ln2 (BTC each), qkv 3BTC, fch and fch_gelu 4BTC each;
  // ln1/ln2 mean and rstd (BT each); the attention probabilities B*H*T*T, or the fused kernel's
  // log-sum-exps B*H*T.
  const std::int64_t att = fused ? B * H * T : B * H * T * T;
  const std::int64_t per_block = 15 * BTC + 4 * BT + att;
  const std::int64_t blocks = checkpointing ? 1 : L;
  // lnf BTC, lnf mean/rstd 2BT, logits BTV, losses BT; backward scratch tmp, dres_a, dres_b,
  // d_ln, d_tmp, d_atty (BTC each), d_qkv 3BTC, d_fch and d_fch_gelu 4BTC each; att_work T*T
  // (materialised only: the fused kernel's tiles are team scratch).
  const std::int64_t once = BTC + 3 * BT + BT * V + 6 * BTC + 3 * BTC + 8 * BTC + (fused ? 0 : T * T);
  // Checkpointed sub-layer units keep each block's res2 too: the MLP's recompute starts there.
  const std::int64_t mid = checkpointing && c.sublayer_units ? L * BTC : 0;
  return (L + 1) * BTC + blocks * per_block + once + mid;
}

// Model FLOPs: a unit's GEMMs cost 2 x its parameters per token forward and twice that
// backward; attention adds 4TC forward and 8TC backward per block and token. The embedding's
// GEMM is the tied LM head (wte, counted with wpe's rows as the head's); the lookups are free.
// 6P + 12LTC per token: the sum of what the layers declare stage by stage
// (DecoderSkeleton::unit_flops and head_flops).
double flops_per_token(const ModelConfig& m) {
  const double P = double(total_numel(gpt2_units(m)));
  const double L = m.n_layer, T = m.block_size, C = m.n_embd;
  return 6.0 * P + 12.0 * L * T * C;
}

std::string hf_config_json(const ModelConfig& m, const std::string& torch_dtype) {
  const int special = std::min(50256, m.vocab_size - 1);  // GPT-2's <|endoftext|> when it exists
  nlohmann::ordered_json j{{"architectures", {"GPT2LMHeadModel"}},
                           {"model_type", "gpt2"},
                           {"vocab_size", m.vocab_size},
                           {"n_positions", m.positions()},
                           {"n_ctx", m.positions()},
                           {"n_embd", m.n_embd},
                           {"n_layer", m.n_layer},
                           {"n_head", m.n_head},
                           {"n_inner", nullptr},
                           {"activation_function", "gelu_new"},
                           {"resid_pdrop", 0.0},
                           {"embd_pdrop", 0.0},
                           {"attn_pdrop", 0.0},
                           {"layer_norm_epsilon", 1e-5},
                           {"initializer_range", 0.02},
                           {"scale_attn_weights", true},
                           {"use_cache", true},
                           {"bos_token_id", special},
                           {"eos_token_id", special},
                           {"tie_word_embeddings", true},
                           {"torch_dtype", torch_dtype}};
  return j.dump(2) + "\n";
}

// Hugging Face writes GPT2LMHeadModel's tensors with or without the "transformer." prefix.
std::vector<std::string> stored_names(const std::string& name) {
  return {name, "transformer." + name};
}

const std::vector<std::int64_t>* find(const TensorShapes& tensors, const std::string& name) {
  for (const std::string& n : stored_names(name))
    if (const auto* s = tensors(n)) return s;
  return nullptr;
}

// The GPT2Config fields that change the computation must be the ones this model computes.
void check_config(const nlohmann::json& j, const std::string& path, const std::string& file,
                  ModelConfig& shape) {
  auto int_field = [&](const char* key, int tensors_say) {
    if (!j.contains(key) || j[key].is_null()) return;
    if (!j[key].is_number_integer()) throw std::invalid_argument(path + ": " + key + ": not an integer");
    const long long v = j[key].get<long long>();
    if (tensors_say > 0 && v != tensors_say)
      throw std::invalid_argument(path + ": " + key + ": " + std::to_string(v) +
                                  ", but the tensors in " + file + " say " +
                                  std::to_string(tensors_say));
  };
  int_field("n_layer", shape.n_layer);
  int_field("n_embd", shape.n_embd);
  int_field("vocab_size", shape.vocab_size);
  int_field("n_positions", shape.n_positions);
  int_field("n_inner", 4 * shape.n_embd);
  if (j.contains("n_head")) {
    if (!j["n_head"].is_number_integer() || j["n_head"].get<long long>() <= 0 ||
        j["n_head"].get<long long>() > shape.n_embd)
      throw std::invalid_argument(path + ": n_head: not a head count for n_embd " +
                                  std::to_string(shape.n_embd));
    shape.n_head = j["n_head"].get<int>();
  }
  if (j.contains("activation_function") && j["activation_function"].is_string()) {
    const std::string a = j["activation_function"];
    if (a != "gelu_new" && a != "gelu_pytorch_tanh")
      throw std::invalid_argument(path + ": activation_function: " + quoted_line(a) + ", but this model computes GPT-2's tanh GELU (gelu_new)");
  }
  if (j.contains("layer_norm_epsilon") && j["layer_norm_epsilon"].is_number()) {
    const double e = j["layer_norm_epsilon"];
    if (std::abs(e - 1e-5) > 1e-12)
      throw std::invalid_argument(path + ": layer_norm_epsilon: " + std::to_string(e) +
                                  ", but this model's LayerNorm uses 1e-5");
  }
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"] == false)
    throw std::invalid_argument(path + ": tie_word_embeddings: false, but this model's LM head is wte");
}

ModelConfig read_shape(const TensorShapes& tensors, const std::string& file,
                       const nlohmann::json* config, const std::string& config_path) {
  const auto* wte = find(tensors, "wte.weight");
  const auto* wpe = find(tensors, "wpe.weight");
  if (!wte || wte->size() != 2) throw std::invalid_argument(file + ": wte.weight: missing or not 2-D");
  if (!wpe || wpe->size() != 2) throw std::invalid_argument(file + ": wpe.weight: missing or not 2-D");
  ModelConfig s;
  s.arch = "gpt2";
  s.n_layer = 0;
  s.n_head = 0;
  s.vocab_size = int((*wte)[0]);
  s.n_embd = int((*wte)[1]);
  s.n_positions = int((*wpe)[0]);
  while (find(tensors, "h." + std::to_string(s.n_layer) + ".ln_1.weight")) ++s.n_layer;
  if (config) check_config(*config, config_path, file, s);
  return s;
}

// ---- llm.c's GPT-2 parameter file ------------------------------------------------------------

// The header [magic, version, maxT, V, L, NH, C, Vp] as a GPT-2 shape.
ModelConfig llmc_shape(const std::int32_t* h) {
  const int maxT = h[2], V = h[3], L = h[4], NH = h[5], C = h[6], Vp = h[7];
  auto bad = [](const char* what, long long v) {
    throw std::invalid_argument(std::string(what) + " " + std::to_string(v) + " is not valid");
  };
  if (maxT <= 0) bad("max_seq_len", maxT);
  if (V <= 0) bad("vocab_size", V);
  if (L <= 0 || L > 4096) bad("num_layers", L);
  if (C <= 0 || C > (1 << 16)) bad("channels", C);
  if (NH <= 0 || C % NH != 0) bad("num_heads", NH);
  if (Vp < V) bad("padded_vocab_size", Vp);
  ModelConfig m;
  m.arch = "gpt2";
  m.n_layer = L;
  m.n_head = NH;
  m.n_embd = C;
  m.vocab_size = V;
  m.n_positions = maxT;
  return m;
}

// llm.c's order, each layer tensor stacked over the L layers:
//   wte (Vp, C)  wpe (maxT, C)  ln1w ln1b (L, C)  qkvw (L, 3C, C)  qkvb (L, 3C)
//   attprojw (L, C, C)  attprojb (L, C)  ln2w ln2b (L, C)  fcw (L, 4C, C)  fcb (L, 4C)
//   fcprojw (L, C, 4C)  fcprojb (L, C)  lnfw lnfb (C)
// The matrices are PyTorch Linear weights (out, in): the transpose of Hugging Face's Conv1D
// (in, out). wte's rows past V are padding and are not read.
std::vector<LlmcTensor> llmc_tensors(const ModelConfig& m, int padded_vocab) {
  const std::int64_t c = m.n_embd;
  std::vector<LlmcTensor> t{{"wte.weight", padded_vocab * c}, {"wpe.weight", m.positions() * c}};
  auto per_layer = [&](const std::string& suffix, std::int64_t numel, bool transposed,
                       std::int64_t in, std::int64_t out) {
    for (int k = 0; k < m.n_layer; ++k)
      t.push_back({"h." + std::to_string(k) + "." + suffix, numel, transposed, in, out});
  };
  per_layer("ln_1.weight", c, false, 0, 0);
  per_layer("ln_1.bias", c, false, 0, 0);
  per_layer("attn.c_attn.weight", 3 * c * c, true, c, 3 * c);
  per_layer("attn.c_attn.bias", 3 * c, false, 0, 0);
  per_layer("attn.c_proj.weight", c * c, true, c, c);
  per_layer("attn.c_proj.bias", c, false, 0, 0);
  per_layer("ln_2.weight", c, false, 0, 0);
  per_layer("ln_2.bias", c, false, 0, 0);
  per_layer("mlp.c_fc.weight", 4 * c * c, true, c, 4 * c);
  per_layer("mlp.c_fc.bias", 4 * c, false, 0, 0);
  per_layer("mlp.c_proj.weight", 4 * c * c, true, 4 * c, c);
  per_layer("mlp.c_proj.bias", c, false, 0, 0);
  t.push_back({"ln_f.weight", c});
  t.push_back({"ln_f.bias", c});
  return t;
}

}  // namespace

Architecture architecture() {
  Architecture a;
  a.name = "gpt2";
  a.family = "GPT";
  a.units = gpt2_units;
  a.init_unit = [](const ModelConfig& m, const UnitLayout& u, float* full, std::uint64_t seed) {
    gpt2_init_unit(u, full, seed, m.n_layer);
  };
  a.head_unit = [](const ModelConfig&, const ModelChoices&) { return 0; };  // tied: wte
  a.build = [](const ModelConfig& m, const DecoderOptions& o, MemoryTracker& tracker) {
    return build_skeleton(m, gpt2_block_spec(m), gpt2_units(m, o.choices), 0,
                          resolve_attention(o.choices.attention, m.block_size), o, tracker);
  };
  a.activation_elements = activation_elements;
  a.bf16_scratch_elements = [](const ModelConfig& m, int B) {
    return skeleton_bf16_scratch_elements(gpt2_block_spec(m), m, B);
  };
  a.flops_per_token = flops_per_token;
  a.flops_formula = "6P + 12LTC (T = block_size)";
  a.recompute_formula = "each block's forward (2P_block + 4TC)";
  a.hf.architectures = "GPT2LMHeadModel";
  a.hf.config_json = hf_config_json;
  a.hf.recognizes = [](const TensorShapes& t) { return find(t, "wte.weight") != nullptr; };
  a.hf.read_shape = read_shape;
  a.hf.stored_names = stored_names;
  a.llmc.shape = llmc_shape;
  a.llmc.tensors = llmc_tensors;
  // The Llama-only keys, where a deck sets them to something GPT-2 does not compute.
  a.checks = {
      {"model.n_kv_head", "model.arch",
       [](const ModelConfig& m) -> std::string {
         if (m.kv_heads() == m.n_head) return "";
         return "GPT-2 has no grouped-query attention: expected 0 or model.n_head = " +
                std::to_string(m.n_head) + ", got " + std::to_string(m.n_kv_head);
       }},
      {"model.ffn_hidden", "model.arch",
       [](const ModelConfig& m) -> std::string {
         if (m.ffn_hidden == 0 || m.ffn_hidden == 4 * m.n_embd) return "";
         return "GPT-2's MLP is 4 x n_embd wide: expected 0 or " + std::to_string(4 * m.n_embd) +
                ", got " + std::to_string(m.ffn_hidden);
       }},
      {"model.tie_embeddings", "model.arch",
       [](const ModelConfig& m) -> std::string {
         return m.tie_embeddings ? "" : "GPT-2's LM head is its token embedding (tied): expected true";
       }},
      {"model.rope_scaling", "model.arch",
       [](const ModelConfig& m) -> std::string {
         return m.rope_scaling == "none" ? "" : "GPT-2 has learned positions, no rotary embedding: expected \"none\"";
       }},
      no_experts_check("GPT-2"),
  };
  return a;
}

}  // namespace fsdp::gpt2
