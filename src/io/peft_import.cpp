// SPDX-License-Identifier: MIT
#include "io/peft_import.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "io/peft_export.hpp"
#include "io/raw_file.hpp"
#include "io/safetensors.hpp"
#include "io/weights_error.hpp"
#include "model/architecture.hpp"
#include "model/layers/lora_layout.hpp"

namespace fsdp::weights {
namespace fs = std::filesystem;

namespace {

nlohmann::json adapter_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw WeightsError(path + ": cannot open (a PEFT adapter directory holds adapter_config.json)");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw WeightsError(path + ": not JSON: " + std::string(e.what()).substr(0, 120));
  }
}

// A key whose value must be absent, null, false or empty: fsdp does not compute it.
void refuse_if_set(const nlohmann::json& j, const std::string& path, const char* key, const char* why) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if ((it->is_boolean() && !it->get<bool>()) || (it->is_object() && it->empty()) ||
      (it->is_array() && it->empty()) || (it->is_string() && (it->get<std::string>() == "none" || it->get<std::string>().empty())))
    return;
  throw WeightsError(path + ": " + key + " = " + quote(it->dump()) + ": " + why);
}

class AdapterSource final : public WeightSource {
 public:
  AdapterSource(const std::string& dir, const ModelConfig& m)
      : file_((fs::path(dir) / "adapter_model.safetensors").string()),
        header_(SafetensorsHeader::read(file_)),
        raw_(file_),
        arch_(architecture_of(m)) {
    path_ = file_;
    shape_ = m;
  }

  void check(const std::vector<UnitLayout>& units) const override {
    std::size_t wanted = 0;
    for (const UnitLayout& u : units)
      for (const TensorSpec& t : u.tensors) {
        if (!is_adapter(t)) continue;
        ++wanted;
        const std::string key = ckpt::peft_key(arch_, t);
        const auto it = header_.tensors.find(key);
        if (it == header_.tensors.end()) throw WeightsError(file_ + ": " + key + ": missing (lora.targets names its module)");
        if (it->second.shape != t.shape)
          throw WeightsError(file_ + ": " + key + ": shape " + shape_text(it->second.shape) +
                             ", but this run's adapter is " + shape_text(t.shape));
      }
    if (header_.tensors.size() != wanted)
      throw WeightsError(file_ + ": holds " + std::to_string(header_.tensors.size()) + " tensors, but this run's " +
                         "adapters are " + std::to_string(wanted) + " (a module the run does not adapt?)");
  }

  void read(const TensorSpec& t, std::int64_t begin, std::int64_t end, float* out) const override {
    const StoredTensor& s = header_.tensors.at(ckpt::peft_key(arch_, t));
    const int esize = dtype_bytes(s.dtype);
    std::vector<char> raw(std::size_t(end - begin) * std::size_t(esize));
    raw_.read(s.begin + std::uint64_t(begin) * std::uint64_t(esize), raw.size(), raw.data(), t.name);
    if (s.dtype == DType::F16) widen_f16_to_f32(raw.data(), end - begin, out);
    else widen_to_f32(raw.data(), s.dtype == DType::BF16, end - begin, out);
  }

 private:
  std::string file_;
  SafetensorsHeader header_;
  RawFile raw_;
  const Architecture& arch_;
};

}  // namespace

LoraChoices read_adapter_config(const std::string& dir, double& dropout) {
  const std::string path = (fs::path(dir) / "adapter_config.json").string();
  const nlohmann::json j = adapter_json(path);
  const auto need = [&](const char* key) -> const nlohmann::json& {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) throw WeightsError(path + ": " + key + ": missing");
    return *it;
  };
  if (!need("peft_type").is_string() || need("peft_type").get<std::string>() != "LORA")
    throw WeightsError(path + ": peft_type = " + quote(need("peft_type").dump()) + ": only LORA adapters are read");
  refuse_if_set(j, path, "use_dora", "DoRA adapters are not computed by fsdp");
  refuse_if_set(j, path, "modules_to_save", "fsdp trains the adapters alone");
  refuse_if_set(j, path, "bias", "fsdp's adapters have no bias");
  refuse_if_set(j, path, "rank_pattern", "one rank for every adapter only");
  refuse_if_set(j, path, "alpha_pattern", "one alpha for every adapter only");
  refuse_if_set(j, path, "layers_to_transform", "every layer's targeted modules only");
  LoraChoices l;
  try {
    l.rank = need("r").get<int>();
    l.alpha = need("lora_alpha").get<double>();
    l.rslora = j.value("use_rslora", false);
    dropout = j.value("lora_dropout", 0.0);
    const nlohmann::json& t = need("target_modules");
    if (t.is_string()) l.targets = lora_targets(t.get<std::string>());
    else for (const auto& x : t) l.targets.push_back(x.get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw WeightsError(path + ": r, lora_alpha, use_rslora, lora_dropout or target_modules: " +
                       std::string(e.what()).substr(0, 120));
  }
  if (l.rank < 1) throw WeightsError(path + ": r = " + std::to_string(l.rank) + ": an adapter needs rank 1 or more");
  if (!(l.alpha > 0)) throw WeightsError(path + ": lora_alpha must be > 0");
  return l;
}

std::unique_ptr<WeightSource> open_adapter(const std::string& dir, const ModelConfig& m) {
  return std::make_unique<AdapterSource>(dir, m);
}

}  // namespace fsdp::weights
