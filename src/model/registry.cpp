// SPDX-License-Identifier: MIT
#include "model/registry.hpp"

#include <map>
#include <stdexcept>

#include "model/architecture.hpp"
#include "model/layers/lora_layout.hpp"
#include "model/gpt2/gpt2_arch.hpp"
#include "model/llama/llama_arch.hpp"
#include "model/moe/moe_arch.hpp"

namespace fsdp {
namespace {

// The built-in architectures, registered on first use (a static library drops registration
// objects that nothing references, so they are listed here rather than self-registering).
std::map<std::string, Architecture>& table() {
  static std::map<std::string, Architecture> t = [] {
    std::map<std::string, Architecture> m;
    for (Architecture a : {gpt2::architecture(), llama::architecture(),
                           llama::family_architecture(/*qk_norm=*/true),
                           moe::architecture(moe::Family::Qwen3Moe), moe::architecture(moe::Family::Mixtral)})
      m.emplace(a.name, std::move(a));
    return m;
  }();
  return t;
}

}  // namespace

const Architecture& architecture(const std::string& name) {
  const auto& t = table();
  const auto it = t.find(name);
  if (it != t.end()) return it->second;
  throw std::invalid_argument("model.arch: '" + name + "' is not an architecture (" +
                              architecture_list() + ")");
}

bool has_architecture(const std::string& name) { return table().count(name) > 0; }

void register_architecture(const Architecture& a) { table()[a.name] = a; }

std::vector<std::string> architecture_names() {
  std::vector<std::string> n;
  for (const auto& [name, a] : table()) n.push_back(name);
  return n;
}

std::string architecture_list() {
  std::string out;
  for (const std::string& n : architecture_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

const Architecture& architecture_of(const ModelConfig& m) { return architecture(m.arch); }

ArchCheck no_experts_check(const std::string& family) {
  return {"model.n_experts", "model.arch", [family](const ModelConfig& m) -> std::string {
            if (m.n_experts == 0) return "";
            return family + " has a dense MLP: expected 0 (experts: model.arch = qwen3_moe or mixtral), got " +
                   std::to_string(m.n_experts);
          }};
}

std::string quoted_line(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 80)) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  return s.size() > 80 ? out + "..." : out;
}

std::string describe_model(const ModelConfig& m) {
  std::string heads = std::to_string(m.n_head) + " heads";
  if (m.head_size > 0) heads += " of " + std::to_string(m.head_size);
  if (m.kv_heads() < m.n_head) heads += ", " + std::to_string(m.kv_heads()) + " key/value";
  if (m.ffn_hidden > 0 && (m.n_experts == 0 || !m.mlp_only_layers.empty() || m.decoder_sparse_step > 1 ||
                           m.moe_ffn() != m.ffn_hidden))
    heads += "; MLP " + std::to_string(m.ffn_hidden);
  if (m.n_experts > 0)
    heads += "; " + std::to_string(m.n_experts) + " experts of " + std::to_string(m.moe_ffn()) + ", " +
             std::to_string(m.experts_per_token) + " per token";
  if (!m.tie_embeddings) heads += "; untied head";
  return architecture_of(m).family + " " + std::to_string(m.n_layer) + " layers x " +
         std::to_string(m.n_embd) + " channels (" + heads + "), vocab " +
         std::to_string(m.vocab_size) + ", context " + std::to_string(m.block_size);
}

std::vector<UnitLayout> model_units(const ModelConfig& m, const ModelChoices& c) {
  const Architecture& a = architecture_of(m);
  std::vector<UnitLayout> units = a.units(m, c);
  // The adapters' placement follows the architecture's own (config/run_setup.cpp appends it).
  if (c.lora.on()) add_adapters(units, m, c.lora, int(a.placements.size()));
  return units;
}

void init_model_unit(const ModelConfig& m, const UnitLayout& unit, float* full, std::uint64_t seed) {
  architecture_of(m).init_unit(m, unit, full, seed);
  init_adapters(unit, full, seed);  // over whatever the architecture drew there
}

std::int64_t num_params(const ModelConfig& m) { return total_numel(model_units(m)); }

std::int64_t num_active_params(const ModelConfig& m) {
  const Architecture& a = architecture_of(m);
  return a.active_params ? a.active_params(m) : num_params(m);
}

std::string params_phrase(const ModelConfig& m) {
  const auto commas = [](std::int64_t v) {
    std::string d = std::to_string(v), out;
    for (std::size_t i = 0; i < d.size(); ++i) {
      if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
      out += d[i];
    }
    return out;
  };
  const std::int64_t all = num_params(m), active = num_active_params(m);
  return commas(all) + " parameters" + (active != all ? " (" + commas(active) + " active)" : "");
}

}  // namespace fsdp
