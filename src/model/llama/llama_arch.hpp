// SPDX-License-Identifier: MIT
// Llama 3 (and the family that shares its shape: Qwen2, Mistral, SmolLM2) as an architecture
// (model/architecture.hpp): units, initialisation, model, the planner's activation and FLOP
// counts, the deck's cross-key rules, and the Hugging Face LlamaForCausalLM form.
#pragma once
#include "model/architecture.hpp"

namespace fsdp::llama {

Architecture architecture();
// Llama's family with Qwen3's per-head q/k RMSNorm (qk_norm): "qwen3", Qwen3ForCausalLM.
Architecture family_architecture(bool qk_norm);

// Which attention kernel a Llama runs: model.attention as for GPT-2 (both kernels read grouped-
// query heads in place on a CPU), except that grouped-query heads take the fused kernel on a
// GPU, whose materialised kernel reads GPT-2's packed q | k | v only.
AttentionPath architecture_attention(const ModelConfig& m, const ModelChoices& c);

// What the skeleton allocates for the family's activations (Architecture::activation_elements),
// every layer with Llama's dense MLP.
std::int64_t activation_elements(const ModelConfig& m, const ModelChoices& c, int micro_batch,
                                 bool qk_norm);
// The deck's rules on heads, head size, MLP width and rotary scaling.
std::vector<ArchCheck> family_checks();
// The unit holding the LM head (tied: the embedding's; untied: the final unit).
int head_unit(const ModelConfig& m, const ModelChoices& c);

}  // namespace fsdp::llama
