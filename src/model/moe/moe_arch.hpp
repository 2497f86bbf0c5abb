// SPDX-License-Identifier: MIT
// Qwen3-MoE (model.arch = "qwen3_moe") and Mixtral ("mixtral") as architectures
// (model/architecture.hpp): Llama's layers with a mixture of experts for the MLP
// (model/moe/moe_layout.hpp), the planner's counts on active parameters, the deck's rules and
// the Hugging Face Qwen3MoeForCausalLM and MixtralForCausalLM forms.
#pragma once
#include "model/architecture.hpp"
#include "model/moe/moe_layout.hpp"

namespace fsdp::moe {

Architecture architecture(Family f);

}  // namespace fsdp::moe
