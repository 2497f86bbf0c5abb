// SPDX-License-Identifier: MIT
// Reading and writing the config.json of Llama's family (LlamaForCausalLM, Qwen3ForCausalLM and
// the mixtures of experts built on their attention: model/moe/moe_arch.cpp): a strict reader of
// its fields, the attention and rotary shape every member shares, and the config object export
// starts from.
#pragma once
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "model/architecture.hpp"

namespace fsdp::llama {

inline std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// config.json's fields, read strictly: a missing required field, a wrong type, or a value the
// tensors contradict is one line naming the file and the key.
class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& j, const std::string& path) : j_(j), path_(path) {}
  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw std::invalid_argument(path_ + ": " + key + ": " + why);
  }
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  // An integer of object o within [lo, hi], or `fallback` when absent. Read as the file's value
  // (never through int: 2^32 + 16 is not 16) and refused naming the file's key, not a deck key.
  long long integer_in(const nlohmann::json& o, const std::string& key, long long lo,
                       long long hi, long long fallback) const {
    if (!o.contains(key) || o[key].is_null()) return fallback;
    const nlohmann::json& v = o[key];
    if (!v.is_number_integer()) fail(key, v.is_number() ? num(v.get<double>()) + " is not an integer" : "not an integer");
    const bool in_range = v.is_number_unsigned()
                              ? v.get<std::uint64_t>() <= std::uint64_t(hi) && v.get<long long>() >= lo
                              : v.get<long long>() >= lo && v.get<long long>() <= hi;
    if (!in_range)
      fail(key, (v.is_number_unsigned() ? std::to_string(v.get<std::uint64_t>())
                                        : std::to_string(v.get<long long>())) +
                    " is not in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v.get<long long>();
  }
  long long integer(const char* key, bool required) const {
    if (!has(key) && required) fail(key, "missing");
    return integer_in(j_, key, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), 0);
  }
  // A finite number of object o within [lo, hi] (the range the deck's key allows), or fallback.
  double number(const nlohmann::json& o, const std::string& key, double fallback, double lo,
                double hi) const {
    if (!o.contains(key) || o[key].is_null()) return fallback;
    if (!o[key].is_number()) fail(key, "not a number");
    const double v = o[key].get<double>();
    if (!(v >= lo && v <= hi)) fail(key, num(v) + " is not in [" + num(lo) + ", " + num(hi) + "]");
    return v;
  }
  // An integer field whose value the tensors already say.
  void agrees(const char* key, long long tensors_say, const std::string& file, bool required) const {
    const long long v = integer(key, required);
    if (has(key) && v != tensors_say)
      fail(key, std::to_string(v) + ", but the tensors in " + file + " say " + std::to_string(tensors_say));
  }
  const nlohmann::json& json() const { return j_; }

 private:
  const nlohmann::json& j_;
  std::string path_;
};


// Everything but the MLP: the embedding, layers (counted by input_layernorm), heads, head size,
// rotary settings, norm epsilon and tied head, checked against the tensors. family names the
// model in the message for a missing config.json.
ModelConfig read_common_shape(const TensorShapes& tensors, const std::string& file,
                              const nlohmann::json* config, const std::string& config_path,
                              bool qk_norm, const std::string& family);

// LlamaForCausalLM's (qk_norm: Qwen3ForCausalLM's) config.json for m.
nlohmann::ordered_json hf_config_object(const ModelConfig& m, const std::string& torch_dtype,
                                        bool qk_norm);

}  // namespace fsdp::llama
