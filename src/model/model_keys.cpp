// SPDX-License-Identifier: MIT
#include "model/model_keys.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace fsdp {
namespace {

using M = ModelConfig;

bool llama3_rope(const ModelConfig& m) { return m.rope_scaling == "llama3"; }
bool has_experts(const ModelConfig& m) { return m.n_experts > 0; }

using Field = decltype(ModelKey::field);

ModelKey make(const char* key, Field field, double lo, double hi, const char* meaning) {
  ModelKey k;
  k.key = key;
  k.field = field;
  k.lo = lo;
  k.hi = hi;
  k.meaning = meaning;
  k.attribute = std::string("model_") + key;
  return k;
}

std::vector<ModelKey> build() {
  std::vector<ModelKey> k;
  ModelKey kv = make("n_kv_head", &M::n_kv_head, 0, 1 << 16,
                     "key/value heads (grouped-query attention, Llama); 0 = n_head; divides n_head");
  kv.resolved = [](const ModelConfig& m) { return double(m.kv_heads()); };
  kv.shapes_params = true;
  k.push_back(kv);
  ModelKey hd = make("head_dim", &M::head_size, 0, 1 << 16,
                     "each attention head's size (Qwen3: 128); 0 = n_embd / n_head; even (rotary)");
  hd.resolved = [](const ModelConfig& m) { return double(m.head_dim()); };
  hd.omit_default = true;
  hd.shapes_params = true;
  k.push_back(hd);
  ModelKey ffn = make("ffn_hidden", &M::ffn_hidden, 0, 1 << 22,
                      "the MLP's hidden width (Llama's intermediate_size); 0 = GPT-2's 4 x n_embd");
  ffn.shapes_params = true;
  k.push_back(ffn);
  ModelKey tie = make("tie_embeddings", &M::tie_embeddings, 0, 1,
                      "the LM head is the token embedding (GPT-2 always; Llama 3.2 1B/3B, SmolLM2)");
  tie.shapes_params = true;
  k.push_back(tie);
  k.push_back(make("norm_eps", &M::norm_eps, 1e-12, 0.1, "RMSNorm's epsilon (Llama's rms_norm_eps)"));
  k.push_back(make("rope_theta", &M::rope_theta, 1.0, 1e12,
                   "rotary base: inverse frequencies theta^(-2i/D) (Llama 3: 500000)"));
  ModelKey sc = make("rope_scaling", &M::rope_scaling, 0, 0,
                     "llama3: Llama 3.1's frequency blend (the rope_* keys below)");
  sc.choices = {"none", "llama3"};
  k.push_back(sc);
  for (ModelKey r : {make("rope_factor", &M::rope_factor, 1.0, 1e6,
                          "llama3: long wavelengths are divided by this"),
                     make("rope_low_freq_factor", &M::rope_low_freq_factor, 1e-6, 1e6,
                          "llama3: wavelengths above original_context / this are scaled"),
                     make("rope_high_freq_factor", &M::rope_high_freq_factor, 1e-6, 1e6,
                          "llama3: wavelengths below original_context / this are kept"),
                     make("rope_original_context", &M::rope_original_context, 1, 1 << 24,
                          "llama3: the context the model was pretrained at")}) {
    r.applies = llama3_rope;
    k.push_back(r);
  }
  // Mixtures of experts. Left out of files at their defaults, so a dense model's file is what it
  // was before they existed.
  std::vector<ModelKey> moe{
      // At most 1024: the largest published models have 384; per-expert bookkeeping and
      // weights past that only end in bad_alloc minutes in (issue 63), so the deck is refused.
      make("n_experts", &M::n_experts, 0, 1 << 10,
           "experts per sparse layer (num_experts; Mixtral's num_local_experts); 0 = a dense model"),
      make("experts_per_token", &M::experts_per_token, 1, 1 << 16,
           "experts each token is routed to (num_experts_per_tok, the router's top-k)"),
      make("moe_ffn_hidden", &M::moe_ffn_hidden, 0, 1 << 22,
           "each expert's hidden width (moe_intermediate_size); 0 = ffn_hidden"),
      make("norm_topk_prob", &M::norm_topk_prob, 0, 1,
           "the k routing weights renormalised to sum to 1 (Mixtral always)"),
      make("decoder_sparse_step", &M::decoder_sparse_step, 1, 1 << 16,
           "layer l has experts when l + 1 is a multiple of this (and l is not in mlp_only_layers)"),
      make("mlp_only_layers", &M::mlp_only_layers, 0, 0,
           "layers that keep a dense MLP of ffn_hidden, as comma-separated indices (\"\": none)"),
      make("router_aux_loss_coef", &M::router_aux_loss_coef, 0, 1e3,
           "the load-balancing loss's weight (with output_router_logits)"),
      make("output_router_logits", &M::output_router_logits, 0, 1,
           "Hugging Face adds the load-balancing loss in training (moe.balance overrides)")};
  for (ModelKey& e : moe) {
    e.experts = true;
    e.omit_default = true;
    e.applies = has_experts;
  }
  moe[0].shapes_params = moe[2].shapes_params = moe[4].shapes_params = moe[5].shapes_params = true;
  moe[0].applies = [](const ModelConfig&) { return true; };
  moe[5].valid = [](const std::string& v) -> std::string {
    try {
      layer_list(v);
      return "";
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  };
  k.insert(k.end(), moe.begin(), moe.end());
  return k;
}

}  // namespace

std::vector<int> layer_list(const std::string& text) {
  std::vector<int> out;
  std::size_t i = 0;
  auto space = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  };
  space();
  while (i < text.size()) {
    const std::size_t start = i;
    long long v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && v <= (1 << 24)) v = 10 * v + (text[i++] - '0');
    if (i == start || v > (1 << 24))
      throw std::invalid_argument("expected comma-separated layer indices, got '" + text.substr(0, 40) + "'");
    if (std::find(out.begin(), out.end(), int(v)) == out.end()) out.push_back(int(v));
    space();
    if (i < text.size() && text[i] == ',') {
      ++i;
      space();
      if (i == text.size()) throw std::invalid_argument("a trailing comma in '" + text.substr(0, 40) + "'");
    } else if (i < text.size()) {
      throw std::invalid_argument("expected comma-separated layer indices, got '" + text.substr(0, 40) + "'");
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool ModelConfig::sparse_layer(int l) const {
  if (n_experts <= 0 || (l + 1) % std::max(1, decoder_sparse_step) != 0) return false;
  if (mlp_only_layers.empty()) return true;
  std::vector<int> dense;
  try {
    dense = layer_list(mlp_only_layers);
  } catch (const std::invalid_argument&) {
    return true;  // the deck's check (model/moe/moe_arch.cpp) names the key
  }
  return std::find(dense.begin(), dense.end(), l) == dense.end();
}

const std::vector<ModelKey>& model_keys() {
  static const std::vector<ModelKey> k = build();
  return k;
}

const ModelKey& model_key(const std::string& key) {
  for (const ModelKey& k : model_keys())
    if (k.key == key) return k;
  throw std::out_of_range("model." + key + " is not a model key");
}

double ModelKey::number(const ModelConfig& m) const {
  if (resolved) return resolved(m);
  if (auto p = std::get_if<int M::*>(&field)) return double(m.**p);
  if (auto p = std::get_if<double M::*>(&field)) return m.**p;
  if (auto p = std::get_if<bool M::*>(&field)) return m.**p ? 1.0 : 0.0;
  throw std::logic_error("model." + key + " is text");
}

void ModelKey::set_number(ModelConfig& m, double v) const {
  if (auto p = std::get_if<int M::*>(&field)) m.**p = int(v);
  else if (auto p = std::get_if<double M::*>(&field)) m.**p = v;
  else if (auto p = std::get_if<bool M::*>(&field)) m.**p = v != 0.0;
  else throw std::logic_error("model." + key + " is text");
}

const std::string& ModelKey::text(const ModelConfig& m) const {
  return m.*std::get<std::string M::*>(field);
}

void ModelKey::set_text(ModelConfig& m, const std::string& v) const {
  m.*std::get<std::string M::*>(field) = v;
}

void ModelKey::copy(const ModelConfig& from, ModelConfig& to) const {
  std::visit([&](auto p) { to.*p = from.*p; }, field);
}

ModelConfig resized_model(const ModelConfig& like, int n_layer, int n_head, int head_dim) {
  ModelConfig s = like;
  s.n_layer = n_layer;
  s.n_head = n_head;
  s.n_embd = n_head * head_dim;
  if (like.head_size > 0) s.head_size = head_dim;
  if (like.ffn_hidden > 0)
    s.ffn_hidden = int(std::max(1L, std::lround(double(like.ffn_hidden) * s.n_embd / like.n_embd)));
  if (like.n_kv_head > 0) {
    const int group = std::max(1, like.n_head / like.kv_heads());
    s.n_kv_head = std::max(1, s.n_head / group);
    while (s.n_head % s.n_kv_head != 0) --s.n_kv_head;
  }
  return s;
}

bool ModelKey::is_default(const ModelConfig& m) const {
  static const ModelConfig d;
  return std::visit([&](auto p) { return m.*p == d.*p; }, field);
}

std::string ModelKey::show(const ModelConfig& m) const {
  if (is_text()) return text(m);
  if (is_bool()) return number(m) != 0.0 ? "true" : "false";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", number(m));
  return b;
}

}  // namespace fsdp
