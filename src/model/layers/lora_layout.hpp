// SPDX-License-Identifier: MIT
// The adapters of a LoRA run (lora.*, docs/lora.md) as tensors of the units: for each targeted
// projection W [out, in] (its Hugging Face module, e.g. q_proj, named by lora.targets), two
// trainable tensors beside it, named as PEFT names them, A "<module>.lora_A.weight" [r, in] and
// B "<module>.lora_B.weight" [out, r], in a placement of their own after the base's, so that a
// unit's frozen base and its adapters are separate parts (fsdp/part_layout.hpp). Every tensor
// of the base is frozen, as PEFT freezes it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_choices.hpp"
#include "model/model_config.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// lora.targets as a list: Hugging Face module names separated by spaces or commas.
std::vector<std::string> lora_targets(const std::string& text);

bool is_adapter(const TensorSpec& t);  // a lora_A or lora_B tensor
// The module of a projection's weight: "model.layers.0.self_attn.q_proj.weight" -> "q_proj".
std::string module_of(const std::string& weight_name);
// The weight an adapter tensor adapts: "...q_proj.lora_A.weight" -> "...q_proj.weight".
std::string adapted_weight(const std::string& adapter_name);

// Freezes every tensor of `units` and adds the adapters of l in placement `part`, each after
// the tensors of its unit. Throws std::invalid_argument with the one-line reason for a target
// no projection has, a rank above a targeted projection's min(in, out), or a model this does
// not adapt yet (a mixture of experts).
void add_adapters(std::vector<UnitLayout>& units, const ModelConfig& m, const LoraChoices& l, int part);

// The adapters of `unit` in `full` (its buffer, at the offsets of `unit`) as PEFT initialises
// them: A Kaiming-uniform (bound 1 / sqrt(in)) from the run's counter-based seed, B zero, so the
// adapted model starts as the base.
void init_adapters(const UnitLayout& unit, float* full, std::uint64_t seed);

// What a LoRA run trains, for the start-up log and fsdp-plan: parameters trained and frozen, the
// projections adapted, and one line saying them with the gradient and AdamW bytes (fp32, 12 a
// trained parameter) against full fine-tuning's.
struct AdapterCounts {
  std::int64_t trained = 0, frozen = 0, modules = 0;
};
AdapterCounts adapter_counts(const std::vector<UnitLayout>& units);
std::string adapter_summary(const LoraChoices& l, const AdapterCounts& c);

}  // namespace fsdp
