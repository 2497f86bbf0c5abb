// SPDX-License-Identifier: MIT
// A PEFT adapter directory read back (--adapter DIR of fsdp-train and fsdp-sample): its
// adapter_config.json as the run's lora.* choices, and adapter_model.safetensors's tensors by
// PEFT's keys (io/peft_export.hpp), so adapters trained by PEFT (or exported by fsdp) continue
// training or sample on the base they were trained on. Problems throw weights::WeightsError
// with one line naming the file and the key.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "io/weight_source.hpp"
#include "model/model_choices.hpp"
#include "model/model_config.hpp"

namespace fsdp::weights {

// adapter_config.json's choices: peft_type LORA, r, lora_alpha, target_modules (a list, or
// "all-linear"), use_rslora, lora_dropout (kept in dropout: fsdp applies none). What fsdp does
// not compute (a bias, modules_to_save, DoRA, per-layer ranks or alphas, layers_to_transform)
// is refused by name.
LoraChoices read_adapter_config(const std::string& dir, double& dropout);

// The adapters of adapter_model.safetensors in dir for a model of architecture m; check()
// takes the run's units and requires every adapter tensor of them, with its shape.
std::unique_ptr<WeightSource> open_adapter(const std::string& dir, const ModelConfig& m);

}  // namespace fsdp::weights
