// SPDX-License-Identifier: MIT
// The readers behind open_weights (weight_source.hpp), one per file format.
#pragma once
#include <memory>
#include <string>

#include "io/weight_source.hpp"

namespace fsdp::weights {

std::unique_ptr<WeightSource> open_safetensors(const std::string& path);  // file or HF directory
std::unique_ptr<WeightSource> open_llmc(const std::string& path);

inline constexpr std::int32_t kLlmcParamsMagic = 20240326;

}  // namespace fsdp::weights
