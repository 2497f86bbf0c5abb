// SPDX-License-Identifier: MIT
#include "train/init_weights.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>

#include "config/load_config.hpp"
#include "comm/agree.hpp"
#include "io/checkpoint_format.hpp"
#include "io/h5_io.hpp"
#include "io/peft_import.hpp"
#include "io/weight_source.hpp"
#include "io/weights_error.hpp"
#include "model/architecture.hpp"
#include "model/layers/lora_layout.hpp"
#include "model/model_keys.hpp"
#include "train/nonfinite_weights.hpp"

namespace fsdp {
namespace {

using weights::WeightsError;
using weights::WeightFormat;

ModelConfig checkpoint_shape(const std::string& path) {
  h5::silence_errors();
  try {
    if (const std::string why = ckpt::not_hdf5(path); !why.empty()) throw h5::H5Error(why);
    h5::File f{FSDP_H5_ID(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT))};
    return ckpt::read_header(f.get()).model;
  } catch (const std::exception& e) {
    throw WeightsError(path + ": " + e.what());
  }
}

ModelConfig file_shape(const std::string& path) {
  if (weights::detect_weight_format(path) == WeightFormat::Checkpoint) return checkpoint_shape(path);
  return weights::open_weights(path)->shape();
}

// Why a file of shape f cannot fill model m, or "".
std::string shape_mismatch(const ModelConfig& f, const ModelConfig& m) {
  if (f.arch != m.arch) return "arch " + f.arch + " (this run: " + m.arch + ")";
  std::string out;
  auto cmp = [&](const char* key, int file, int model) {
    if (file != model)
      out += std::string(out.empty() ? "" : ", ") + key + " " + std::to_string(file) +
             " (this run: " + std::to_string(model) + ")";
  };
  cmp("n_layer", f.n_layer, m.n_layer);
  cmp("n_embd", f.n_embd, m.n_embd);
  cmp("vocab_size", f.vocab_size, m.vocab_size);
  cmp("n_positions", f.n_positions, m.positions());
  return out;
}

// The model keys beyond the shape, for a file that says them all (HfAdapter::config_complete):
// taken where the deck is silent, refused where it disagrees.
void take_the_rest(const RunConfig& cfg, const std::string& path, const ModelConfig& f,
                   ModelConfig& m) {
  for (const std::string& key : architecture(f.arch).keys) {
    const ModelKey& k = model_key(key);
    if (!k.applies(f)) continue;
    const auto given = cfg.key_origin.find("model." + key);
    if (given == cfg.key_origin.end()) {
      k.copy(f, m);
      continue;
    }
    // Compared as the model computes with them (n_kv_head 0 is n_head).
    const bool same = k.is_text() ? k.text(f) == k.text(m) : k.number(f) == k.number(m);
    if (same) continue;
    auto show = [&](const ModelConfig& c) { return k.is_text() ? "\"" + k.show(c) + "\"" : k.show(c); };
    throw WeightsError("--init-from " + path + ": model." + key + ": the file has " + show(f) +
                       ", but " + given->second + " sets " + show(m));
  }
}

}  // namespace

RunConfig with_init_shape(const RunConfig& cfg, const std::string& path) {
  const ModelConfig f = file_shape(path);
  RunConfig out = cfg;
  ModelConfig& m = out.model;
  if (const auto given = cfg.key_origin.find("model.arch"); given == cfg.key_origin.end())
    m.arch = f.arch;
  else if (f.arch != m.arch)
    throw WeightsError("--init-from " + path + ": model.arch: the file has " + f.arch + ", but " +
                       given->second + " sets " + m.arch);
  auto take = [&](const char* key, int file_value, int deck_value, int& field) {
    if (file_value <= 0) return;  // the file does not say (n_head without a config.json)
    const auto given = cfg.key_origin.find(std::string("model.") + key);
    if (given == cfg.key_origin.end()) {
      field = file_value;
      return;
    }
    if (deck_value != file_value)
      throw WeightsError("--init-from " + path + ": model." + key + ": the file has " +
                         std::to_string(file_value) + ", but " + given->second + " sets " +
                         std::to_string(deck_value));
  };
  take("n_layer", f.n_layer, m.n_layer, m.n_layer);
  take("n_head", f.n_head, m.n_head, m.n_head);
  take("n_embd", f.n_embd, m.n_embd, m.n_embd);
  take("vocab_size", f.vocab_size, m.vocab_size, m.vocab_size);
  take("n_positions", f.n_positions, m.positions(), m.n_positions);
  if (architecture(f.arch).hf.config_complete) take_the_rest(cfg, path, f, m);
  validate_config(out, "--init-from " + path);
  out.resolved_toml = to_toml(out);
  return out;
}

namespace {
// src's tensors into this rank's shards, over what they hold (the padding 0, a LoRA run's
// adapters their initial values): the base's tensors, or the adapters alone. Then the full
// parameters ddp, zero1 and zero2 keep.
void read_into_shards(const weights::WeightSource& src, Engine& engine, MPI_Comm world, bool adapters) {
  std::string err;
  for (int u = 0; u < int(engine.units().size()); ++u) {
    const ShardedUnit& su = engine.units()[std::size_t(u)];
    const ShardVec shard = engine.param_shard(u);
    std::vector<float> host(std::size_t(shard.size()), 0.f);
    shard.copy_to(host.data());
    for (const PartShard& ps : su.parts) {  // this rank's slice of each part
      const h5::FlatRange mine{ps.flat_begin(), ps.flat_begin() + ps.shard};
      for (const TensorSpec& t : su.stored->tensors) {
        const h5::FlatRange r = h5::intersect(mine, {t.offset, t.offset + t.numel});
        if (r.empty() || !err.empty() || is_adapter(t) != adapters) continue;
        try {
          src.read(t, r.begin - t.offset, r.end - t.offset,
                   host.data() + ps.shard_offset + (r.begin - mine.begin));
        } catch (const std::exception& e) {
          err = e.what();
        }
      }
    }
    shard.copy_from(host.data());
  }
  err = agree_on_error(world, err);
  if (!err.empty()) throw WeightsError(err);
  engine.sync_full_params();
}

// The file's values into this rank's shards (checked for shape, not for values).
void load_weights(const std::string& path, Engine& engine, Checkpointer& checkpointer,
                  MPI_Comm world) {
  std::string err;
  WeightFormat format = WeightFormat::Safetensors;
  try {
    format = weights::detect_weight_format(path);
  } catch (const std::exception& e) {
    err = e.what();
  }
  err = agree_on_error(world, err);
  if (!err.empty()) throw WeightsError(err);
  if (format == WeightFormat::Checkpoint) {
    checkpointer.load_params(path, engine.state());  // verifies every dataset's checksums
    return;
  }

  std::unique_ptr<weights::WeightSource> src;
  try {
    src = weights::open_weights(path);
    const std::string mismatch = shape_mismatch(src->shape(), engine.setup().model);
    if (!mismatch.empty()) throw WeightsError(path + ": written for a different model: " + mismatch);
    // A LoRA run's adapters are not in the base's file: they keep their initial values.
    std::vector<UnitLayout> base = engine.model().units();
    for (UnitLayout& u : base)
      u.tensors.erase(std::remove_if(u.tensors.begin(), u.tensors.end(), [](const TensorSpec& t) { return is_adapter(t); }),
                      u.tensors.end());
    src->check(base);
  } catch (const std::exception& e) {
    err = e.what();
  }
  err = agree_on_error(world, err);
  if (!err.empty()) throw WeightsError(err);

  read_into_shards(*src, engine, world, /*adapters=*/false);
}
}  // namespace

void init_weights(const std::string& path, Engine& engine, Checkpointer& checkpointer,
                  MPI_Comm world, bool allow_nonfinite) {
  load_weights(path, engine, checkpointer, world);
  if (allow_nonfinite) return;
  if (const std::string bad = first_nonfinite_param(engine, world); !bad.empty())
    throw WeightsError(path + ": parameter " + bad +
                       " (non-finite weights are refused; train.allow_nonfinite_weights = true "
                       "accepts them)");
}

RunConfig with_adapter(const RunConfig& cfg, const std::string& dir, std::string& note) {
  double dropout = 0.0;
  const LoraChoices l = weights::read_adapter_config(dir, dropout);
  RunConfig out = cfg;
  std::string targets;
  for (const std::string& t : l.targets) targets += (targets.empty() ? "" : " ") + t;
  // A lora key the deck gave must say what the adapter is.
  const auto agree = [&](const char* key, const std::string& deck, const std::string& file, bool same) {
    const auto given = cfg.key_origin.find(std::string("lora.") + key);
    if (given == cfg.key_origin.end() || same) return;
    throw WeightsError("--adapter " + dir + ": lora." + key + ": adapter_config.json has " + file + ", but " +
                       given->second + " sets " + deck);
  };
  agree("enabled", cfg.lora.enabled ? "true" : "false", "an adapter", cfg.lora.enabled);
  agree("rank", std::to_string(cfg.lora.rank), std::to_string(l.rank), cfg.lora.rank == l.rank);
  agree("alpha", std::to_string(cfg.lora.alpha), std::to_string(l.alpha), cfg.lora.alpha == l.alpha);
  agree("rslora", cfg.lora.rslora ? "true" : "false", l.rslora ? "true" : "false", cfg.lora.rslora == l.rslora);
  std::vector<std::string> deck_t = lora_targets(cfg.lora.targets), file_t = l.targets;
  std::sort(deck_t.begin(), deck_t.end());
  std::sort(file_t.begin(), file_t.end());
  agree("targets", "\"" + cfg.lora.targets + "\"", "\"" + targets + "\"", deck_t == file_t);
  out.lora.enabled = true;
  out.lora.rank = l.rank;
  out.lora.alpha = l.alpha;
  out.lora.rslora = l.rslora;
  out.lora.targets = targets;
  out.lora.dropout = 0.0;
  note = dropout > 0 ? "adapter_config.json's lora_dropout " + std::to_string(dropout) +
                           " is not applied (fsdp's adapters train without dropout)"
                     : "";
  validate_config(out, "--adapter " + dir);
  out.resolved_toml = to_toml(out);
  return out;
}

void load_adapter(const std::string& dir, Engine& engine, MPI_Comm world) {
  std::unique_ptr<weights::WeightSource> src;
  std::string err;
  try {
    src = weights::open_adapter(dir, engine.setup().model);
    src->check(engine.model().units());
  } catch (const std::exception& e) {
    err = e.what();
  }
  err = agree_on_error(world, err);
  if (!err.empty()) throw WeightsError(err);
  read_into_shards(*src, engine, world, /*adapters=*/true);
}

}  // namespace fsdp
