// SPDX-License-Identifier: MIT
// Reading weights from a Hugging Face safetensors file (+ config.json when present), in the
// form of the architecture the file holds (model/architecture.hpp, HfAdapter).
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
#include "model/architecture.hpp"

namespace fsdp::weights {
namespace fs = std::filesystem;
namespace {

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// The registered architecture whose Hugging Face form the file is: the one config.json's
// "architectures" names, else the first whose tensors the file has, else the default (whose
// shape reader then names what is missing).
const Architecture& architecture_in(const TensorShapes& tensors, const nlohmann::json* config) {
  if (config && config->contains("architectures") && (*config)["architectures"].is_array())
    for (const auto& a : (*config)["architectures"])
      for (const std::string& n : architecture_names())
        if (a.is_string() && a.get<std::string>() == architecture(n).hf.architectures)
          return architecture(n);
  for (const std::string& n : architecture_names())
    if (architecture(n).hf.recognizes(tensors)) return architecture(n);
  return architecture(kDefaultArch);
}

class SafetensorsSource : public WeightSource {
 public:
  SafetensorsSource(const std::string& file, const std::string& config_json)
      : header_(SafetensorsHeader::read(file)), file_(file) {
    path_ = file;
    const TensorShapes shapes = [this](const std::string& name) {
      auto it = header_.tensors.find(name);
      return it == header_.tensors.end() ? nullptr : &it->second.shape;
    };
    nlohmann::json config;
    if (!config_json.empty()) config = read_config(config_json);
    const nlohmann::json* c = config_json.empty() ? nullptr : &config;
    arch_ = &architecture_in(shapes, c);
    try {
      shape_ = arch_->hf.read_shape(shapes, file, c, config_json);
    } catch (const std::invalid_argument& e) {
      throw WeightsError(e.what());
    }
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
  // The tensor under any name the architecture's Hugging Face form may store it as.
  const StoredTensor* find(const std::string& name) const {
    for (const std::string& n : arch_->hf.stored_names(name)) {
      auto it = header_.tensors.find(n);
      if (it != header_.tensors.end()) return &it->second;
    }
    return nullptr;
  }

  static nlohmann::json read_config(const std::string& path) {
    nlohmann::json j;
    try {
      std::ifstream in(path);
      j = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      throw WeightsError(path + ": not valid JSON (" + quote(e.what()) + ")");
    }
    if (!j.is_object()) throw WeightsError(path + ": not a JSON object");
    return j;
  }

  const Architecture* arch_ = nullptr;
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
