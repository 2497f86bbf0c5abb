// SPDX-License-Identifier: MIT
// GPT-2 as an architecture (model/architecture.hpp): its units, initialisation, model, the
// planner's activation and FLOP counts, and the Hugging Face GPT2LMHeadModel form.
#pragma once
#include "model/architecture.hpp"

namespace fsdp::gpt2 {

Architecture architecture();

// The model itself (Architecture::build), defined with Gpt2 in gpt2.cpp: the only part of
// the architecture that needs the kernels (the fuzz targets link without them).
std::unique_ptr<Decoder> make_model(const ModelConfig& m, const DecoderOptions& o,
                                    MemoryTracker& tracker);

}  // namespace fsdp::gpt2
