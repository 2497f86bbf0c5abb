// SPDX-License-Identifier: MIT
// Reading weights from a Hugging Face safetensors file (+ config.json when present), in the
// form of the architecture the file holds (model/architecture.hpp, HfAdapter).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
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
    add_fused_expert_views();
    // Under any name the architecture may store it as, once that is known.
    const TensorShapes shapes = [this](const std::string& name) -> const std::vector<std::int64_t>* {
      const Where* w = find(name);
      return w ? &w->tensor->shape : nullptr;
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
  // transformers 5 computes with each layer's experts fused and can store them so
  // (save_pretrained(save_original_format=False)): <p>mlp.experts.gate_up_proj [E, 2F, C] (each
  // expert's gate rows, then its up rows) and <p>mlp.experts.down_proj [E, C, F]. Each expert's
  // tensors are slices of them: added as views under their per-expert names
  // (<p>mlp.experts.{e}.gate_proj.weight, up_proj, down_proj; an architecture's stored_names
  // maps its own names onto these), unless the file stores that name itself.
  void add_fused_expert_views() {
    std::vector<std::pair<std::string, Where>> found;
    const auto view = [&](const Where& w, const std::string& name, std::int64_t offset,
                          std::vector<std::int64_t> shape) {
      const std::uint64_t esize = std::uint64_t(dtype_bytes(w.tensor->dtype));
      StoredTensor v;
      v.dtype = w.tensor->dtype;
      v.shape = std::move(shape);
      v.begin = w.tensor->begin + std::uint64_t(offset) * esize;
      v.end = v.begin + std::uint64_t(v.numel()) * esize;
      views_.push_back(std::move(v));
      found.emplace_back(name, Where{w.file, &views_.back()});
    };
    const std::string gate_up = "mlp.experts.gate_up_proj", down = "mlp.experts.down_proj";
    for (const auto& [name, w] : where_) {
      const std::vector<std::int64_t>& sh = w.tensor->shape;
      const bool is_gate_up = ends_with(name, gate_up), is_down = ends_with(name, down);
      if (!is_gate_up && !is_down) continue;
      if (sh.size() != 3 || (is_gate_up && sh[1] % 2 != 0))
        throw WeightsError(headers_[w.file].path + ": " + name + ": shape " + shape_text(sh) +
                           (is_gate_up ? ", not [experts, 2 x expert width, hidden]"
                                       : ", not [experts, hidden, expert width]"));
      const std::string x = name.substr(0, name.size() - (is_gate_up ? gate_up : down).size()) + "mlp.experts.";
      const std::int64_t E = sh[0];
      for (std::int64_t e = 0; e < E; ++e) {
        const std::string ex = x + std::to_string(e);
        if (is_down) {
          view(w, ex + ".down_proj.weight", e * sh[1] * sh[2], {sh[1], sh[2]});
          continue;
        }
        const std::int64_t F = sh[1] / 2, C = sh[2];
        view(w, ex + ".gate_proj.weight", e * 2 * F * C, {F, C});
        view(w, ex + ".up_proj.weight", e * 2 * F * C + F * C, {F, C});
      }
    }
    for (auto& [name, w] : found) where_.emplace(name, w);
  }

  // The tensor under any name the architecture's Hugging Face form may store it as.
  const Where* find(const std::string& name) const {
    if (!arch_) {
      auto it = where_.find(name);
      return it == where_.end() ? nullptr : &it->second;
    }
    for (const std::string& n : arch_->hf.stored_names(name)) {
      auto it = where_.find(n);
      if (it != where_.end()) return &it->second;
    }
    return nullptr;
  }

  const Architecture* arch_ = nullptr;
  std::vector<SafetensorsHeader> headers_;  // stable: where_ points into their maps
  std::vector<std::unique_ptr<RawFile>> raw_;
  std::deque<StoredTensor> views_;  // the pieces' views: stable, where_ points into it
  std::map<std::string, Where> where_;
};

std::string kind_of(const fs::file_status& st) {
  switch (st.type()) {
    case fs::file_type::directory: return "a directory";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::socket: return "a socket";
    default: return "not a file";
  }
}

// Whether `inner` (canonical) lies at or under `base` (canonical).
bool under(const fs::path& inner, const fs::path& base) {
  auto i = inner.begin();
  for (auto b = base.begin(); b != base.end(); ++b, ++i)
    if (i == inner.end() || *i != *b) return false;
  return true;
}

// A file of the model directory `dir` that is a link resolving outside it: where it points,
// else "". Links into the directory's own Hugging Face hub cache are kept: the cache stores
// models--org--name/snapshots/<rev>/<file> as a link to ../../blobs/<hash>, so a link may
// resolve into blobs/ of the nearest ancestor of `dir` that holds both blobs/ and snapshots/.
std::string link_outside(const fs::path& dir, const std::string& file) {
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(file, ec))) return {};
  const fs::path target = fs::canonical(file, ec);
  if (ec) return "(unresolvable)";
  const fs::path home = fs::canonical(dir.empty() ? fs::path(".") : dir, ec);
  if (!ec && under(target, home)) return {};
  for (fs::path a = fs::absolute(dir.empty() ? fs::path(".") : dir, ec).lexically_normal();
       !a.empty(); a = a.parent_path()) {
    if (fs::is_directory(a / "blobs", ec) && fs::is_directory(a / "snapshots", ec)) {
      const fs::path blobs = fs::canonical(a / "blobs", ec);
      if (!ec && under(target, blobs)) return {};
      break;  // the nearest cache root decides
    }
    if (a == a.parent_path()) break;
  }
  return target.string();
}

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
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st))
      throw WeightsError(index + ": weight_map: " + quote(name) + " -> " + quote(f) +
                         ": no such file");
    if (!fs::is_regular_file(st))
      throw WeightsError(index + ": weight_map: " + quote(name) + " -> " + quote(f) + ": " +
                         kind_of(st) + ", not a regular file");
    if (const std::string where = link_outside(dir, path); !where.empty())
      throw WeightsError(index + ": weight_map: " + quote(name) + " -> " + quote(f) +
                         ": a link to " + where + ", outside the model directory and its "
                         "Hugging Face cache's blobs/ (docs/models.md)");
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
    if (const std::string where = link_outside(path, file); !where.empty())
      throw WeightsError(file + ": a link to " + where + ", outside the model directory and its "
                         "Hugging Face cache's blobs/ (docs/models.md)");
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
