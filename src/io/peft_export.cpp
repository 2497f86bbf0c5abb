// SPDX-License-Identifier: MIT
#include "io/peft_export.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "comm/agree.hpp"
#include "io/atomic_output.hpp"
#include "io/block_hash.hpp"
#include "io/checkpoint_scan.hpp"
#include "io/hf_export_owned.hpp"
#include "io/safetensors.hpp"
#include "model/architecture.hpp"
#include "model/layers/lora_layout.hpp"

namespace fsdp::ckpt {
namespace fs = std::filesystem;
using weights::DType;
using weights::StoredTensor;

std::string peft_key(const Architecture& arch, const TensorSpec& t) {
  std::string module = arch.hf.stored_names(adapted_weight(t.name)).front();
  module.resize(module.size() - 7);  // without ".weight"
  const bool a = ends_with(t.name, ".lora_A.weight");
  return "base_model.model." + module + (a ? ".lora_A.weight" : ".lora_B.weight");
}

namespace {

std::string adapter_config(const Header& h, const std::set<std::string>& modules, const std::string& base) {
  const LoraChoices& l = h.lora;
  nlohmann::ordered_json j;
  j["base_model_name_or_path"] = base.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(base);
  j["bias"] = "none";
  // GPT-2's projections are Conv1D ([in, out]); PEFT marks their adapters so (their A and B
  // are [r, in] and [out, r] all the same).
  j["fan_in_fan_out"] = h.model.arch == "gpt2";
  j["inference_mode"] = true;
  j["init_lora_weights"] = true;
  if (l.alpha == double(std::int64_t(l.alpha))) j["lora_alpha"] = std::int64_t(l.alpha);
  else j["lora_alpha"] = l.alpha;
  j["lora_dropout"] = 0.0;
  j["modules_to_save"] = nullptr;
  j["peft_type"] = "LORA";
  j["r"] = l.rank;
  j["revision"] = nullptr;
  j["target_modules"] = nlohmann::ordered_json(std::vector<std::string>(modules.begin(), modules.end()));
  j["task_type"] = "CAUSAL_LM";
  j["use_dora"] = false;
  j["use_rslora"] = l.rslora;
  return j.dump(2) + "\n";
}

std::vector<TensorSpec> adapter_specs(const Header& h) {
  ModelChoices choices;
  choices.lora = h.lora;
  std::vector<TensorSpec> out;
  for (const UnitLayout& u : model_units(h.model, choices))
    for (const TensorSpec& t : u.tensors)
      if (is_adapter(t)) out.push_back(t);
  return out;
}

}  // namespace

std::map<std::string, std::vector<float>> read_adapters(MPI_Comm comm, const std::string& checkpoint,
                                                        Opened& o, std::string& err, std::string& damaged) {
  // Every rank reads every adapter whole (they are small) and checks it against its stored
  // checksums; metadata reads are collective, so every rank meets the same problem.
  const std::int64_t B = o.header.checksum_block_elems;
  std::map<std::string, std::vector<float>> values;
  for (const TensorSpec& t : adapter_specs(o.header)) {
    const std::string path = std::string(group_path(Part::Params)) + "/" + t.name;
    try {
      const std::string bad = check_shape(o.file.get(), {path, std::vector<hsize_t>(t.shape.begin(), t.shape.end())});
      if (!bad.empty()) throw std::runtime_error(bad);
      h5::Dataset d{FSDP_H5_ID(H5Dopen2(o.file.get(), path.c_str(), H5P_DEFAULT))};
      const std::vector<std::uint64_t> stored = stored_checksums(d.get(), t.numel, B);
      std::vector<float>& v = values[t.name];
      v.resize(std::size_t(t.numel));
      h5::read_flat(d.get(), {0, t.numel}, v.data(), H5P_DEFAULT);
      std::vector<std::uint64_t> table(stored.size(), 0);
      hash_whole_blocks(v.data(), {0, t.numel}, t.numel, B, table);
      if (table != stored && damaged.empty()) damaged = checkpoint + ": " + path + ": checksum mismatch: the data is damaged";
    } catch (const std::exception& e) {
      if (err.empty()) err = checkpoint + ": " + path + ": " + e.what();
    }
  }
  damaged = agree_on_error(comm, damaged);
  err = agree_on_error(comm, err);
  return values;
}

int export_peft(MPI_Comm comm, const std::string& checkpoint, const std::string& dir,
                const std::string& base) {
  const Comm c(comm);
  auto say = [&](const std::string& m) {
    if (c.rank == 0) std::fprintf(stderr, "fsdp-ckpt export: %s\n", m.c_str());
  };
  Opened o = open_checkpoint(c, checkpoint);
  if (!o.error.empty()) {
    say(o.error);
    return 2;
  }
  const Header& h = o.header;
  if (!h.lora.on()) {
    say(checkpoint + ": holds no adapters (its run had lora.enabled = false): export the model with --hf");
    return 2;
  }
  const Architecture& arch = architecture_of(h.model);
  const std::vector<TensorSpec> adapters = adapter_specs(h);
  std::set<std::string> modules;
  for (const TensorSpec& t : adapters) modules.insert(module_of(adapted_weight(t.name)));
  std::string damaged, err;
  const std::map<std::string, std::vector<float>> values = read_adapters(comm, checkpoint, o, err, damaged);
  if (!err.empty() || !damaged.empty()) {
    say(!err.empty() ? err : damaged);
    return !err.empty() ? 2 : 1;
  }


  if (c.rank == 0) {
    try {
      const std::vector<std::string> writes{"adapter_model.safetensors", "adapter_config.json"};
      std::vector<OwnedFile> proven;
      if (std::string why = unowned_files(dir, writes, proven); !why.empty()) throw std::runtime_error(why);
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) throw std::runtime_error(dir + ": " + ec.message());
      std::vector<std::string> order;
      std::map<std::string, StoredTensor> tensors;
      for (const TensorSpec& t : adapters) {
        order.push_back(peft_key(arch, t));
        tensors[order.back()] = {DType::F32, t.shape, 0, 0};
      }
      const std::string header = weights::safetensors_header(order, tensors, {{"format", "pt"}});
      io::StagedFile model((fs::path(dir) / writes[0]).string()), config((fs::path(dir) / writes[1]).string());
      model.write(header);
      for (std::size_t i = 0; i < adapters.size(); ++i) {
        const std::vector<float>& v = values.at(adapters[i].name);
        model.write(v.data(), v.size() * sizeof(float));  // little-endian, as safetensors is
      }
      model.finish(model.written());
      config.write(adapter_config(h, modules, base));
      config.finish(config.written());
      std::vector<OwnedFile> both = proven;
      both.push_back(owned_entry(model.temp(), writes[0]));
      both.push_back(owned_entry(config.temp(), writes[1]));
      write_export_record(dir, both);
      model.commit();
      config.commit();
      std::vector<OwnedFile> fresh;
      for (const OwnedFile& f : proven)
        if (f.name != writes[0] && f.name != writes[1]) fresh.push_back(f);
      fresh.push_back(owned_entry((fs::path(dir) / writes[0]).string(), writes[0]));
      fresh.push_back(owned_entry((fs::path(dir) / writes[1]).string(), writes[1]));
      write_export_record(dir, fresh);
      std::printf("fsdp-ckpt export: %s: %zu adapter tensors (rank %d, %zu modules) -> %s\n",
                  checkpoint.c_str(), adapters.size(), h.lora.rank, modules.size(), dir.c_str());
    } catch (const std::exception& e) {
      err = e.what();
    }
  }
  err = agree_on_error(comm, err);
  if (!err.empty()) {
    say(err);
    return 2;
  }
  return 0;
}

}  // namespace fsdp::ckpt
