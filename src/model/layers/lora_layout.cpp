// SPDX-License-Identifier: MIT
#include "model/layers/lora_layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "model/counter_init.hpp"

namespace fsdp {
namespace {

const char* const kA = ".lora_A.weight";
const char* const kB = ".lora_B.weight";

// The projections an adapter can sit on: the hidden matrices (attention and MLP, not the
// embedding or the head), as PEFT's all-linear leaves the output layer out.
bool adaptable(const TensorSpec& t) { return t.hidden && t.shape.size() == 2 && !is_adapter(t); }

std::string joined(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : " ") + n;
  return s;
}

}  // namespace

std::vector<std::string> lora_targets(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text + " ") {
    if (c == ' ' || c == ',' || c == '\t') {
      if (!cur.empty() && std::find(out.begin(), out.end(), cur) == out.end()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

bool is_adapter(const TensorSpec& t) { return ends_with(t.name, kA) || ends_with(t.name, kB); }

std::string module_of(const std::string& weight_name) {
  std::string s = weight_name;
  if (ends_with(s, ".weight")) s.resize(s.size() - 7);
  const std::size_t dot = s.rfind('.');
  return dot == std::string::npos ? s : s.substr(dot + 1);
}

std::string adapted_weight(const std::string& adapter_name) {
  const std::size_t n = std::string(kA).size();  // kA and kB are the same length
  return adapter_name.substr(0, adapter_name.size() - n) + ".weight";
}

void add_adapters(std::vector<UnitLayout>& units, const ModelConfig& m, const LoraChoices& l, int part) {
  if (l.rank < 1)
    throw std::invalid_argument("lora.rank = " + std::to_string(l.rank) + ": an adapter needs rank 1 or more");
  if (m.n_experts > 0)
    throw std::invalid_argument("lora.enabled: a mixture of experts (model.n_experts = " +
                                std::to_string(m.n_experts) +
                                ") takes no adapters yet; LoRA adapts dense models (gpt2, llama, qwen3)");
  if (l.targets.empty())
    throw std::invalid_argument("lora.targets: empty; name the projections to adapt, or all-linear");
  const bool all = l.targets.size() == 1 && l.targets[0] == "all-linear";
  std::set<std::string> modules, matched;
  for (const UnitLayout& u : units)
    for (const TensorSpec& t : u.tensors)
      if (adaptable(t)) modules.insert(module_of(t.name));
  if (!all)
    for (const std::string& want : l.targets)
      if (!modules.count(want))
        throw std::invalid_argument("lora.targets: '" + want + "' names no projection of this " + m.arch +
                                    " model (its projections: " + joined(modules) + ", or all-linear)");
  for (UnitLayout& u : units) {
    std::vector<TensorSpec> adapted;
    for (TensorSpec& t : u.tensors) {
      t.trainable = false;
      if (adaptable(t) && (all || std::count(l.targets.begin(), l.targets.end(), module_of(t.name))))
        adapted.push_back(t);
    }
    for (const TensorSpec& w : adapted) {
      const std::int64_t in = fan_in(w), out = fan_out(w);
      if (l.rank > std::min(in, out))
        throw std::invalid_argument("lora.rank = " + std::to_string(l.rank) + " exceeds min(in, out) = " +
                                    std::to_string(std::min(in, out)) + " of " + w.name + " [" +
                                    std::to_string(w.shape[0]) + ", " + std::to_string(w.shape[1]) + "]");
      const std::string base = w.name.substr(0, w.name.size() - 7);  // without ".weight"
      // Decayed as AdamW decays every trained matrix; fp32 GEMMs whatever fsdp.gemm_dtype says
      // (model/layers/adapted_linear.hpp): not a `gemm` operand of the bf16 casts.
      add_tensor(u, base + kA, {l.rank, in}, /*decay=*/true, /*gemm=*/false, part);
      add_tensor(u, base + kB, {out, l.rank}, /*decay=*/true, /*gemm=*/false, part);
    }
  }
}

AdapterCounts adapter_counts(const std::vector<UnitLayout>& units) {
  AdapterCounts c;
  for (const UnitLayout& u : units)
    for (const TensorSpec& t : u.tensors) {
      (t.trainable ? c.trained : c.frozen) += t.numel;
      if (ends_with(t.name, kA)) ++c.modules;
    }
  return c;
}

std::string adapter_summary(const LoraChoices& l, const AdapterCounts& c) {
  char line[400];
  const double mib = 12.0 / 1048576.0;
  std::snprintf(line, sizeof line,
                "lora: rank %d, scale %.4g, %lld adapted projections; %lld trainable parameters "
                "(%.3f%%), %lld frozen; gradients and optimizer state %.1f MiB instead of %.1f MiB "
                "for full fine-tuning",
                l.rank, double(l.scale()), (long long)c.modules, (long long)c.trained,
                100.0 * double(c.trained) / double(c.trained + c.frozen), (long long)c.frozen,
                mib * double(c.trained), mib * double(c.trained + c.frozen));
  return line;
}

void init_adapters(const UnitLayout& unit, float* full, std::uint64_t seed) {
  for (const TensorSpec& t : unit.tensors) {
    if (!is_adapter(t)) continue;
    float* p = full + t.offset;
    if (ends_with(t.name, kB)) {
      std::fill(p, p + t.numel, 0.f);
      continue;
    }
    // PEFT's kaiming_uniform_(a = sqrt(5)): bound sqrt(6 / ((1 + 5) in)) = 1 / sqrt(in).
    const float bound = float(1.0 / std::sqrt(double(t.shape[1])));
    const std::uint64_t key = tensor_stream(seed, t.name);
    for (std::int64_t i = 0; i < t.numel; ++i) p[i] = uniform_at(key, i, bound);
  }
}

}  // namespace fsdp
