// SPDX-License-Identifier: MIT
// Reading weights from a Hugging Face safetensors file (+ config.json when present), in the
// form of the architecture the file holds (model/architecture.hpp, HfAdapter).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <filesystem>
#include <vector>

#include "core/input_file.hpp"
#include "io/raw_file.hpp"
#include "io/safetensors.hpp"
#include "io/weight_source.hpp"
#include "io/weights_error.hpp"
#include "io/weights_sources.hpp"
#include "model/architecture.hpp"

namespace fsdp::weights {
namespace fs = std::filesystem;
namespace {

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

nlohmann::json read_json(const std::string& path) {
  nlohmann::json j;
  try {
    // config.json and an index are small tables; 64 MiB is far past either (an index of a
    // 400B-parameter model is under 1 MiB) and keeps a device or a huge file from being read.
    j = nlohmann::json::parse(rethrow_input_as<WeightsError>(
        [&] { return read_input(path, "", std::uint64_t(64) << 20); }));
  } catch (const WeightsError&) {
    throw;
  } catch (const std::exception& e) {
    throw WeightsError(path + ": not valid JSON (" + quote(e.what()) + ")");
  }
  if (!j.is_object()) throw WeightsError(path + ": not a JSON object");
  return j;
}

// One safetensors file, or the several that a sharded index (model.safetensors.index.json:
// {"weight_map": {tensor: file}}) names, as every model above a few GB is published. Each
// file's header is read and checked once; a tensor is read from the file that holds it.
class SafetensorsSource : public WeightSource {
 public:
  // files: the safetensors files; index: the index's path ("" for one file), which says where
  // each tensor is; config_json: "" or the directory's config.json.
  SafetensorsSource(const std::vector<std::string>& files, const std::string& index,
                    const std::map<std::string, std::string>& weight_map,
                    const std::string& config_json) {
    path_ = index.empty() ? files.front() : index;
    for (const std::string& f : files) {
      headers_.push_back(SafetensorsHeader::read(f));
      raw_.push_back(std::make_unique<RawFile>(f));
    }
    for (std::size_t i = 0; i < headers_.size(); ++i)
      for (const auto& [name, t] : headers_[i].tensors) {
        if (!index.empty()) {
          // The index decides: a tensor the map sends elsewhere (or nowhere) is not this file's.
          const auto it = weight_map.find(name);
          if (it == weight_map.end() || it->second != fs::path(files[i]).filename().string()) continue;
        }
        where_.emplace(name, Where{i, &t});
      }
    for (const auto& [name, file] : weight_map)
      if (!where_.count(name))
        throw WeightsError(index + ": weight_map: " + quote(name) + " -> " + quote(file) +
                           ": the file holds no such tensor");
    const TensorShapes shapes = [this](const std::string& name) {
      auto it = where_.find(name);
      return it == where_.end() ? nullptr : &it->second.tensor->shape;
    };
    nlohmann::json config;
    if (!config_json.empty()) config = read_json(config_json);
    const nlohmann::json* c = config_json.empty() ? nullptr : &config;
    arch_ = &architecture_in(shapes, c);
    try {
      shape_ = arch_->hf.read_shape(shapes, path_, c, config_json);
    } catch (const std::invalid_argument& e) {
      throw WeightsError(e.what());
    }
  }

  void check(const std::vector<UnitLayout>& units) const override {
    for (const UnitLayout& u : units)
      for (const TensorSpec& t : u.tensors) {
        const Where* w = find(t.name);
        if (!w) throw WeightsError(path_ + ": " + t.name + ": missing");
        if (w->tensor->shape != t.shape)
          throw WeightsError(headers_[w->file].path + ": " + t.name + ": shape " +
                             shape_text(w->tensor->shape) + ", but the model's is " +
                             shape_text(t.shape));
      }
  }

  void read(const TensorSpec& t, std::int64_t begin, std::int64_t end, float* out) const override {
    const Where& w = *find(t.name);
    const StoredTensor& s = *w.tensor;
    const int esize = dtype_bytes(s.dtype);
    std::vector<char> raw(std::size_t(end - begin) * std::size_t(esize));
    raw_[w.file]->read(s.begin + std::uint64_t(begin) * std::uint64_t(esize), raw.size(),
                       raw.data(), t.name);
    if (s.dtype == DType::F16) widen_f16_to_f32(raw.data(), end - begin, out);
    else widen_to_f32(raw.data(), s.dtype == DType::BF16, end - begin, out);
  }

 private:
  struct Where {
    std::size_t file;
    const StoredTensor* tensor;
  };
  // The tensor under any name the architecture's Hugging Face form may store it as.
  const Where* find(const std::string& name) const {
    for (const std::string& n : arch_->hf.stored_names(name)) {
      auto it = where_.find(n);
      if (it != where_.end()) return &it->second;
    }
    return nullptr;
  }

  const Architecture* arch_ = nullptr;
  std::vector<SafetensorsHeader> headers_;  // stable: where_ points into their maps
  std::vector<std::unique_ptr<RawFile>> raw_;
  std::map<std::string, Where> where_;
};

// A sharded checkpoint's index: the files it names (in order of first mention), each one
// checked to be a plain file name inside the directory.
std::vector<std::string> index_files(const std::string& index, const nlohmann::json& j,
                                     std::map<std::string, std::string>& weight_map) {
  if (!j.contains("weight_map") || !j["weight_map"].is_object() || j["weight_map"].empty())
    throw WeightsError(index + ": weight_map: missing or empty");
  std::vector<std::string> files;
  const fs::path dir = fs::path(index).parent_path();
  for (const auto& [name, v] : j["weight_map"].items()) {
    if (!v.is_string()) throw WeightsError(index + ": weight_map: " + quote(name) + ": not a file name");
    const std::string f = v.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
      throw WeightsError(index + ": weight_map: " + quote(name) + " -> " + quote(f) +
                         ": not a file name in the directory");
    weight_map[name] = f;
    const std::string path = (dir / f).string();
    if (std::find(files.begin(), files.end(), path) != files.end()) continue;
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      throw WeightsError(index + ": weight_map: " + quote(name) + " -> " + quote(f) +
                         ": no such file");
    files.push_back(path);
  }
  return files;
}

}  // namespace

std::unique_ptr<WeightSource> open_safetensors(const std::string& path) {
  std::error_code ec;
  std::string file = path, config;
  if (fs::is_directory(path, ec)) {
    const fs::path one = fs::path(path) / "model.safetensors";
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    const fs::path cj = fs::path(path) / "config.json";
    if (fs::is_regular_file(cj, ec)) config = cj.string();
    if (!fs::exists(one, ec) && fs::is_regular_file(index, ec)) {
      std::map<std::string, std::string> weight_map;
      const std::vector<std::string> files =
          index_files(index.string(), read_json(index.string()), weight_map);
      return std::make_unique<SafetensorsSource>(files, index.string(), weight_map, config);
    }
    if (!fs::exists(one, ec))
      throw WeightsError(path + ": a directory without model.safetensors or model.safetensors.index.json");
    file = one.string();
    return std::make_unique<SafetensorsSource>(std::vector<std::string>{file}, "",
                                               std::map<std::string, std::string>{}, config);
  }
  // Only a Hugging Face directory's config.json describes the file, not any that lies near it.
  const fs::path cj = fs::path(file).parent_path() / "config.json";
  if (fs::path(file).filename() == "model.safetensors" && fs::is_regular_file(cj, ec))
    config = cj.string();
  return std::make_unique<SafetensorsSource>(std::vector<std::string>{file}, "",
                                             std::map<std::string, std::string>{}, config);
}

}  // namespace fsdp::weights
