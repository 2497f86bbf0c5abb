// SPDX-License-Identifier: MIT
// GPT-2 as an architecture (model/architecture.hpp): its units, initialisation, model, the
// planner's activation and FLOP counts, and the Hugging Face GPT2LMHeadModel form.
#pragma once
#include "model/architecture.hpp"

namespace fsdp::gpt2 {

Architecture architecture();

}  // namespace fsdp::gpt2
