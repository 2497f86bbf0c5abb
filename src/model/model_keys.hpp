// SPDX-License-Identifier: MIT
// The model.* keys beyond the shape every architecture has (arch, n_layer, n_head, n_embd,
// vocab_size, block_size, n_positions), each declared once: its deck key, type, range or
// choices, meaning, checkpoint attribute and ModelConfig field. The deck's schema, the
// checkpoint header, `fsdp-ckpt info`, --init-from and the planner read them from this table;
// an architecture lists the ones it computes with (Architecture::keys).
#pragma once
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "model/model_config.hpp"

namespace fsdp {

struct ModelKey {
  std::string key;  // under [model], e.g. "n_kv_head"
  std::variant<int ModelConfig::*, double ModelConfig::*, bool ModelConfig::*,
               std::string ModelConfig::*>
      field;
  double lo = 0.0, hi = 0.0;          // numbers: the accepted range
  std::vector<std::string> choices;   // text: the accepted values (empty: `valid` decides)
  // Free text (no choices): "" or why the value is refused.
  std::function<std::string(const std::string&)> valid;
  // The mixture-of-experts keys: only the architectures with experts compute with them.
  bool experts = false;
  std::string meaning;                // --help
  std::string attribute;              // the checkpoint header's attribute
  // The value a checkpoint stores and a file is compared by, where it is not the field itself
  // (n_kv_head: 0 means n_head, so the resolved count).
  std::function<double(const ModelConfig&)> resolved;
  // Written only when it differs from the default: files of models that do not use the key
  // stay byte for byte what they were before it existed (head_dim).
  bool omit_default = false;
  // A different value changes a parameter's shape: a checkpoint is refused under another one.
  bool shapes_params = false;
  // Where the key means something for model m (rope_factor: only with rope_scaling = llama3).
  std::function<bool(const ModelConfig&)> applies = [](const ModelConfig&) { return true; };

  bool is_text() const { return std::holds_alternative<std::string ModelConfig::*>(field); }
  bool is_int() const { return std::holds_alternative<int ModelConfig::*>(field); }
  bool is_bool() const { return std::holds_alternative<bool ModelConfig::*>(field); }
  // Numbers (int, bool as 0/1, double) as the checkpoint stores them.
  double number(const ModelConfig& m) const;
  void set_number(ModelConfig& m, double v) const;
  const std::string& text(const ModelConfig& m) const;
  void set_text(ModelConfig& m, const std::string& v) const;
  // Copies the field as it is (not resolved) from one config to another.
  void copy(const ModelConfig& from, ModelConfig& to) const;
  // Whether m's field holds ModelConfig's default (its raw value, not the resolved one).
  bool is_default(const ModelConfig& m) const;
  // The value as `fsdp-ckpt info` and messages print it.
  std::string show(const ModelConfig& m) const;
};

// mlp_only_layers' layer indices ("1, 3" -> {1, 3}); throws std::invalid_argument saying why.
std::vector<int> layer_list(const std::string& text);

// Every key, in the deck's order.
const std::vector<ModelKey>& model_keys();
const ModelKey& model_key(const std::string& key);  // throws std::out_of_range

// A model of the same family as `like` with n_layer layers of n_head heads of head_dim (the
// planner's sizes): the MLP keeps its width relative to n_embd (Llama's F ~ 8C/3), grouped-query
// heads their group size (a divisor of the new head count), a set head_dim the new one.
ModelConfig resized_model(const ModelConfig& like, int n_layer, int n_head, int head_dim);

}  // namespace fsdp
