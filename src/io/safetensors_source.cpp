// SPDX-License-Identifier: MIT
// Reading GPT-2 weights from a Hugging Face safetensors file (+ config.json when present).
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "io/raw_file.hpp"
#include "io/safetensors.hpp"
#include "io/weight_source.hpp"
#include "io/weights_error.hpp"
#include "io/weights_sources.hpp"

namespace fsdp::weights {
namespace fs = std::filesystem;
namespace {

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

class SafetensorsSource : public WeightSource {
 public:
  SafetensorsSource(const std::string& file, const std::string& config_json)
      : header_(SafetensorsHeader::read(file)), file_(file) {
    path_ = file;
    const StoredTensor* wte = find("wte.weight");
    const StoredTensor* wpe = find("wpe.weight");
    if (!wte || wte->shape.size() != 2) throw WeightsError(file + ": wte.weight: missing or not 2-D");
    if (!wpe || wpe->shape.size() != 2) throw WeightsError(file + ": wpe.weight: missing or not 2-D");
    shape_.vocab_size = int(wte->shape[0]);
    shape_.n_embd = int(wte->shape[1]);
    shape_.n_positions = int(wpe->shape[0]);
    while (find("h." + std::to_string(shape_.n_layer) + ".ln_1.weight")) ++shape_.n_layer;
    if (!config_json.empty()) read_config(config_json);
  }

  void check(const std::vector<UnitLayout>& units) const override {
    for (const UnitLayout& u : units)
      for (const TensorSpec& t : u.tensors) {
        const StoredTensor* s = find(t.name);
        if (!s) throw WeightsError(path_ + ": " + t.name + ": missing");
        if (s->shape != t.shape)
          throw WeightsError(path_ + ": " + t.name + ": shape " + shape_text(s->shape) +
                             ", but the model's is " + shape_text(t.shape));
      }
  }

  void read(const TensorSpec& t, std::int64_t begin, std::int64_t end, float* out) const override {
    const StoredTensor& s = *find(t.name);
    const int esize = dtype_bytes(s.dtype);
    std::vector<char> raw(std::size_t(end - begin) * std::size_t(esize));
    file_.read(s.begin + std::uint64_t(begin) * std::uint64_t(esize), raw.size(), raw.data(), t.name);
    widen_to_f32(raw.data(), s.dtype == DType::BF16, end - begin, out);
  }

 private:
  // Hugging Face writes GPT2LMHeadModel's tensors with or without the "transformer." prefix.
  const StoredTensor* find(const std::string& name) const {
    for (const std::string& n : {name, "transformer." + name}) {
      auto it = header_.tensors.find(n);
      if (it != header_.tensors.end()) return &it->second;
    }
    return nullptr;
  }

  // The GPT2Config fields that change the computation must be the ones this model computes.
  void read_config(const std::string& path) {
    nlohmann::json j;
    try {
      std::ifstream in(path);
      j = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      throw WeightsError(path + ": not valid JSON (" + quote(e.what()) + ")");
    }
    if (!j.is_object()) throw WeightsError(path + ": not a JSON object");
    auto int_field = [&](const char* key, int tensors_say) {
      if (!j.contains(key) || j[key].is_null()) return;
      if (!j[key].is_number_integer())
        throw WeightsError(path + ": " + key + ": not an integer");
      const long long v = j[key].get<long long>();
      if (tensors_say > 0 && v != tensors_say)
        throw WeightsError(path + ": " + key + ": " + std::to_string(v) + ", but the tensors in " +
                           path_ + " say " + std::to_string(tensors_say));
    };
    int_field("n_layer", shape_.n_layer);
    int_field("n_embd", shape_.n_embd);
    int_field("vocab_size", shape_.vocab_size);
    int_field("n_positions", shape_.n_positions);
    int_field("n_inner", 4 * shape_.n_embd);
    if (j.contains("n_head")) {
      if (!j["n_head"].is_number_integer() || j["n_head"].get<long long>() <= 0 ||
          j["n_head"].get<long long>() > shape_.n_embd)
        throw WeightsError(path + ": n_head: not a head count for n_embd " +
                           std::to_string(shape_.n_embd));
      shape_.n_head = j["n_head"].get<int>();
    }
    if (j.contains("activation_function") && j["activation_function"].is_string()) {
      const std::string a = j["activation_function"];
      if (a != "gelu_new" && a != "gelu_pytorch_tanh")
        throw WeightsError(path + ": activation_function: " + quote(a) +
                           ", but this model computes GPT-2's tanh GELU (gelu_new)");
    }
    if (j.contains("layer_norm_epsilon") && j["layer_norm_epsilon"].is_number()) {
      const double e = j["layer_norm_epsilon"];
      if (std::abs(e - 1e-5) > 1e-12)
        throw WeightsError(path + ": layer_norm_epsilon: " + std::to_string(e) +
                           ", but this model's LayerNorm uses 1e-5");
    }
    if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"] == false)
      throw WeightsError(path + ": tie_word_embeddings: false, but this model's LM head is wte");
  }

  SafetensorsHeader header_;
  RawFile file_;
};

}  // namespace

std::unique_ptr<WeightSource> open_safetensors(const std::string& path) {
  std::error_code ec;
  std::string file = path, config;
  if (fs::is_directory(path, ec)) {
    file = (fs::path(path) / "model.safetensors").string();
    if (!fs::exists(file, ec))
      throw WeightsError(path + ": a directory without model.safetensors");
  }
  // Only a Hugging Face directory's config.json describes the file, not any that lies near it.
  const fs::path cj = fs::path(file).parent_path() / "config.json";
  if (fs::path(file).filename() == "model.safetensors" && fs::is_regular_file(cj, ec))
    config = cj.string();
  return std::make_unique<SafetensorsSource>(file, config);
}

}  // namespace fsdp::weights
