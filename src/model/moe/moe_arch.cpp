// SPDX-License-Identifier: MIT
#include "model/moe/moe_arch.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "model/attention_path.hpp"
#include "model/decoder/skeleton_units.hpp"
#include "model/experts/capacity.hpp"
#include "model/llama/hf_config.hpp"
#include "model/llama/llama_arch.hpp"
#include "model/model_keys.hpp"

namespace fsdp::moe {
namespace {

using llama::ConfigReader;
using llama::num;

// The skeleton's sparse-layer buffers (decoder/moe_ops.cpp) in elements, N = BT, R = N K: kept
// per sparse layer (one set with checkpointing) probs NE, choices and weights 2NK, the plan's
// two maps 2R, xe and ye 2RC, gate|up and the gated product 3RF; once the router's logits NE,
// d ye RC, d gate|up and d h 3RF, d weights NK and the balance loss's d/dp E. Dense layers keep
// Llama's up, act (3BTF), and the dense backward scratch exists when any layer is dense.
std::int64_t activation_elements(const ModelConfig& m, const ModelChoices& c, int B, Family f) {
  const bool checkpointing = c.checkpoint_blocks;
  const std::int64_t N = std::int64_t(B) * m.block_size, C = m.n_embd, E = m.n_experts,
                     K = m.experts_per_token, Fe = m.moe_ffn(), R = N * K, L = m.n_layer;
  const std::int64_t dense_mlp = 3 * N * m.ffn_hidden;
  const int Ls = sparse_layers(m);
  const bool any_dense = Ls < L;
  // Expert parallelism: a rank's experts may receive every source's rows (Rx = P R at worst, less
  // under a capacity: model/experts/dispatch.hpp),
  // kept as xr [Rx, C] with their gate|up and gated product; the received rows' outputs and
  // gradients [Rx, C] and the counts [2E] once; deterministic mode's gradients sent home and
  // received [2 x E x 3 Fe C] (model/decoder/moe_ep.cpp).
  const int P = c.expert_slices();
  const std::int64_t Rx = kernels::received_rows_bound(R, int(E), P, float(c.moe.capacity_factor));
  const std::int64_t ep = P > 1 ? 1 : 0;
  const std::int64_t home = P > 1 && c.moe.grads_home ? 2 * E * 3 * Fe * C : 0;
  const std::int64_t kept = N * E + 2 * N * K + 2 * R + 2 * R * C + ep * Rx * C + 3 * Rx * Fe;
  const std::int64_t once = N * E + R * C + 3 * Rx * Fe + N * K + E + ep * (Rx * C + 2 * E) + home;
  // Llama's count holds (L, or 1 with checkpointing) + 1 dense MLPs; keep the ones that exist.
  std::int64_t n = llama::activation_elements(m, c, B, names(f).qk_norm);
  n -= (checkpointing ? 2 : L + 1) * dense_mlp;
  if (checkpointing) n += (any_dense ? 2 : 0) * dense_mlp + (Ls > 0 ? kept : 0);
  else n += (L - Ls + (any_dense ? 1 : 0)) * dense_mlp + Ls * kept;
  const bool bias = c.moe.balance == "bias";
  return n + (Ls > 0 ? once : 0) + (bias ? std::int64_t(Ls) * E : 0);
}

double flops_per_token(const ModelConfig& m) {
  const double embedding = m.tie_embeddings ? 0.0 : double(m.vocab_size) * m.n_embd;
  return 6.0 * (double(active_params(m)) - embedding) +
         12.0 * m.n_layer * double(m.block_size) * double(m.n_head) * m.head_dim();
}

// ---- Hugging Face ----------------------------------------------------------------------------

std::string config_json(const ModelConfig& m, const std::string& dtype, Family f) {
  const FamilyNames& n = names(f);
  nlohmann::ordered_json j = llama::hf_config_object(m, dtype, n.qk_norm);
  j["architectures"] = {n.hf_arch};
  j["model_type"] = n.model_type;
  j.erase("mlp_bias");
  if (f == Family::Qwen3Moe) {
    j["num_experts"] = m.n_experts;
    j["num_experts_per_tok"] = m.experts_per_token;
    j["moe_intermediate_size"] = m.moe_ffn();
    j["norm_topk_prob"] = m.norm_topk_prob;
    j["decoder_sparse_step"] = m.decoder_sparse_step;
    j["mlp_only_layers"] = layer_list(m.mlp_only_layers);
  } else {
    j["num_local_experts"] = m.n_experts;
    j["num_experts_per_tok"] = m.experts_per_token;
    j["router_jitter_noise"] = 0.0;
    j["sliding_window"] = nullptr;
  }
  j["router_aux_loss_coef"] = m.router_aux_loss_coef;
  j["output_router_logits"] = m.output_router_logits;
  return j.dump(2) + "\n";
}

const std::vector<std::int64_t>* shape_of(const TensorShapes& t, const std::string& name,
                                          std::size_t dims, const std::string& file) {
  const auto* s = t(name);
  if (!s || s->size() != dims)
    throw std::invalid_argument(file + ": " + name + ": missing or not " + std::to_string(dims) + "-D");
  return s;
}

// Router settings of other mixtures (DeepSeek's groups and shared experts, sigmoid scores,
// jitter) that this version does not compute: refused naming the key.
void refuse_other_routers(const ConfigReader& r) {
  const nlohmann::json& j = r.json();
  if (j.contains("scoring_func") && j["scoring_func"] != "softmax")
    r.fail("scoring_func", "this version computes a softmax router only");
  for (const char* k : {"n_group", "topk_group"})
    if (r.has(k) && !(j[k].is_number() && j[k].get<double>() <= 1))
      r.fail(k, "grouped routing is not computed by this version");
  for (const char* k : {"n_shared_experts", "shared_expert_intermediate_size", "num_shared_experts"})
    if (r.has(k) && !(j[k].is_number() && j[k].get<double>() == 0))
      r.fail(k, "shared experts are not computed by this version");
  if (r.has("router_jitter_noise") && !(j["router_jitter_noise"].is_number() && j["router_jitter_noise"].get<double>() == 0))
    r.fail("router_jitter_noise", "router noise is not computed by this version (expected 0)");
  if (r.has("topk_method") && j["topk_method"] != "greedy")
    r.fail("topk_method", "this version computes greedy top-k only");
}

ModelConfig read_shape(const TensorShapes& tensors, const std::string& file,
                       const nlohmann::json* config, const std::string& config_path, Family f) {
  const FamilyNames& n = names(f);
  ModelConfig s = llama::read_common_shape(tensors, file, config, config_path, n.qk_norm, n.family);
  s.arch = n.arch;
  const ConfigReader r(*config, config_path);
  const nlohmann::json& j = *config;
  refuse_other_routers(r);
  // Qwen3MoeConfig's num_experts, which transformers 5 writes as num_local_experts (its
  // attribute_map), as Mixtral's.
  const char* experts_key =
      f == Family::Qwen3Moe && !(j.contains("num_local_experts") && !j.contains("num_experts")) ? "num_experts"
                                                                                               : "num_local_experts";
  s.n_experts = int(r.integer_in(j, experts_key, 1, 1 << 10, 0));  // model.n_experts' range
  if (s.n_experts < 1) r.fail(experts_key, "missing");
  s.experts_per_token = int(r.integer_in(j, "num_experts_per_tok", 1, 1 << 16, 0));
  if (s.experts_per_token < 1) r.fail("num_experts_per_tok", "missing");
  if (s.experts_per_token > s.n_experts)
    r.fail("num_experts_per_tok", std::to_string(s.experts_per_token) + " is above " + experts_key +
                                      " " + std::to_string(s.n_experts));
  s.router_aux_loss_coef = r.number(j, "router_aux_loss_coef", 0.001, 0.0, 1e3);
  s.output_router_logits = j.contains("output_router_logits") && j["output_router_logits"] == true;
  if (f == Family::Qwen3Moe) {
    s.ffn_hidden = int(r.integer_in(j, "intermediate_size", 1, 1 << 22, 0));
    s.moe_ffn_hidden = int(r.integer_in(j, "moe_intermediate_size", 1, 1 << 22, 0));
    if (s.moe_ffn_hidden < 1) r.fail("moe_intermediate_size", "missing");
    // Qwen3MoeConfig's default is false.
    s.norm_topk_prob = j.contains("norm_topk_prob") && j["norm_topk_prob"] == true;
    s.decoder_sparse_step = int(r.integer_in(j, "decoder_sparse_step", 1, 1 << 16, 1));
    if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
      if (!j["mlp_only_layers"].is_array()) r.fail("mlp_only_layers", "not a list of layer indices");
      std::string list;
      for (const auto& v : j["mlp_only_layers"]) {
        if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() >= s.n_layer)
          r.fail("mlp_only_layers", "holds something that is not a layer index below " + std::to_string(s.n_layer));
        list += (list.empty() ? "" : ",") + std::to_string(v.get<long long>());
      }
      s.mlp_only_layers = list;
    }
  } else {
    s.ffn_hidden = int(r.integer_in(j, "intermediate_size", 1, 1 << 22, 0));
    if (s.ffn_hidden < 1) r.fail("intermediate_size", "missing");
    s.norm_topk_prob = true;
  }
  // The tensors: every layer's MLP as the config says (experts counted in the first sparse one).
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    if (!s.sparse_layer(l)) {
      const auto* g = shape_of(tensors, p + "mlp.gate_proj.weight", 2, file);
      if (s.ffn_hidden < 1) r.fail("intermediate_size", "missing, and layer " + std::to_string(l) + " is dense");
      if ((*g)[0] != s.ffn_hidden)
        throw std::invalid_argument(file + ": " + p + "mlp.gate_proj.weight: " + std::to_string((*g)[0]) +
                                    " rows, but intermediate_size " + std::to_string(s.ffn_hidden) + " in " + config_path);
      continue;
    }
    const std::string x = p + n.block;
    const auto* router = shape_of(tensors, x + "gate.weight", 2, file);
    if ((*router)[0] != s.n_experts || (*router)[1] != s.n_embd)
      throw std::invalid_argument(file + ": " + x + "gate.weight: [" + std::to_string((*router)[0]) + ", " +
                                  std::to_string((*router)[1]) + "], but " + experts_key + " " +
                                  std::to_string(s.n_experts) + " x hidden_size " + std::to_string(s.n_embd));
    if (tensors(x + "experts." + std::to_string(s.n_experts) + n.gate))
      throw std::invalid_argument(file + ": " + x + "experts." + std::to_string(s.n_experts) + n.gate +
                                  ": more experts than " + experts_key + " " + std::to_string(s.n_experts));
    const auto* g = shape_of(tensors, x + "experts.0" + n.gate, 2, file);
    if ((*g)[0] != s.moe_ffn())
      throw std::invalid_argument(file + ": " + x + "experts.0" + n.gate + ": " + std::to_string((*g)[0]) +
                                  " rows, but " + (f == Family::Qwen3Moe ? "moe_intermediate_size " : "intermediate_size ") +
                                  std::to_string(s.moe_ffn()) + " in " + config_path);
  }
  return s;
}

// Mixtral's names under transformers 5's (conversion_mapping.py): block_sparse_moe. -> mlp.,
// the experts' w1, w3, w2 -> gate_proj, up_proj, down_proj; the form its fused experts take in a
// file (io/safetensors_source.cpp reads those as per-expert views under these names).
std::vector<std::string> stored_names(const std::string& name, Family f) {
  std::vector<std::string> out{name};
  const std::string block = "block_sparse_moe.";
  const auto at = name.find(block);
  if (f != Family::Mixtral || at == std::string::npos) return out;
  std::string v = name.substr(0, at) + "mlp." + name.substr(at + block.size());
  for (const auto& [from, to] : {std::pair<std::string, std::string>{".w1.weight", ".gate_proj.weight"},
                                 {".w3.weight", ".up_proj.weight"}, {".w2.weight", ".down_proj.weight"}})
    if (ends_with(v, from)) v = v.substr(0, v.size() - from.size()) + to;
  out.push_back(v);
  return out;
}

// The model layers are counted by input_layernorm; a file is this family's when one of them
// has its router.
bool recognizes(const TensorShapes& t, Family f) {
  if (!t("model.embed_tokens.weight")) return false;
  for (int l = 0; t("model.layers." + std::to_string(l) + ".input_layernorm.weight"); ++l)
    if (t("model.layers." + std::to_string(l) + "." + names(f).block + "gate.weight")) return true;
  return false;
}

std::vector<ArchCheck> checks(Family f) {
  std::vector<ArchCheck> c = llama::family_checks();
  c.push_back({"model.n_experts", "model.arch", [](const ModelConfig& m) -> std::string {
                 if (m.n_experts >= 1) return "";
                 return "expected the experts per sparse layer (Hugging Face's num_experts) for model.arch = \"" +
                        m.arch + "\", got " + std::to_string(m.n_experts);
               }});
  c.push_back({"model.experts_per_token", "model.n_experts", [](const ModelConfig& m) -> std::string {
                 if (m.experts_per_token <= m.n_experts) return "";
                 return "each token's experts must be at most model.n_experts = " + std::to_string(m.n_experts) +
                        ", got " + std::to_string(m.experts_per_token);
               }});
  c.push_back({"model.mlp_only_layers", "model.n_layer", [](const ModelConfig& m) -> std::string {
                 std::vector<int> v;
                 try {
                   v = layer_list(m.mlp_only_layers);
                 } catch (const std::invalid_argument& e) {
                   return e.what();
                 }
                 for (int l : v)
                   if (l >= m.n_layer)
                     return "layer " + std::to_string(l) + " is not below model.n_layer = " + std::to_string(m.n_layer);
                 return "";
               }});
  if (f == Family::Qwen3Moe) {
    c.push_back({"model.moe_ffn_hidden", "model.arch", [](const ModelConfig& m) -> std::string {
                   if (m.moe_ffn_hidden > 0) return "";
                   return "expected each expert's hidden width (Hugging Face's moe_intermediate_size), got 0";
                 }});
  } else {
    c.push_back({"model.norm_topk_prob", "model.arch", [](const ModelConfig& m) -> std::string {
                   return m.norm_topk_prob ? "" : "Mixtral always renormalises its top-k weights: expected true";
                 }});
    c.push_back({"model.decoder_sparse_step", "model.arch", [](const ModelConfig& m) -> std::string {
                   if (m.decoder_sparse_step == 1 && m.mlp_only_layers.empty()) return "";
                   return "every Mixtral layer has experts: expected 1 (and no model.mlp_only_layers)";
                 }});
    c.push_back({"model.moe_ffn_hidden", "model.ffn_hidden", [](const ModelConfig& m) -> std::string {
                   if (m.moe_ffn_hidden == 0 || m.moe_ffn_hidden == m.ffn_hidden) return "";
                   return "Mixtral's experts are model.ffn_hidden wide (its intermediate_size): expected 0";
                 }});
  }
  return c;
}

}  // namespace

Architecture architecture(Family f) {
  const FamilyNames& n = names(f);
  Architecture a;
  a.name = n.arch;
  a.family = n.family;
  a.units = [f](const ModelConfig& m, const ModelChoices& c) { return moe_units(m, c, f); };
  a.init_unit = [f](const ModelConfig& m, const UnitLayout& u, float* full, std::uint64_t seed) {
    moe_init_unit(u, full, seed, m.n_layer, f);
  };
  a.head_unit = llama::head_unit;
  a.build = [f](const ModelConfig& m, const DecoderOptions& o, MemoryTracker& tracker) {
    return build_skeleton(m, moe_block_spec(m, o.choices, f), moe_units(m, o.choices, f),
                          llama::head_unit(m, o.choices), llama::architecture_attention(m, o.choices),
                          o, tracker);
  };
  a.attention = llama::architecture_attention;
  a.activation_elements = [f](const ModelConfig& m, const ModelChoices& c, int B) {
    return activation_elements(m, c, B, f);
  };
  a.bf16_scratch_elements = [f](const ModelConfig& m, int B) {
    return skeleton_bf16_scratch_elements(moe_block_spec(m, ModelChoices{}, f), m, B);
  };
  a.flops_per_token = flops_per_token;
  a.active_params = [](const ModelConfig& m) { return active_params(m); };
  a.flops_formula = "6(P_active - VC if untied) + 12LT(HD) (P_active: the router and K of E experts per sparse layer)";
  a.recompute_formula = "each layer's forward (2P_layer,active + 4T(HD))";
  a.placements = {{"dense", 1, false}, {"experts", 1, true}};
  a.hf.architectures = n.hf_arch;
  a.hf.config_json = [f](const ModelConfig& m, const std::string& dtype) { return config_json(m, dtype, f); };
  a.hf.recognizes = [f](const TensorShapes& t) { return recognizes(t, f); };
  a.hf.read_shape = [f](const TensorShapes& t, const std::string& file, const nlohmann::json* config,
                        const std::string& config_path) { return read_shape(t, file, config, config_path, f); };
  a.hf.stored_names = [f](const std::string& name) { return stored_names(name, f); };
  a.hf.config_complete = true;
  a.checks = checks(f);
  for (const ModelKey& k : model_keys()) a.keys.push_back(k.key);
  return a;
}

}  // namespace fsdp::moe
