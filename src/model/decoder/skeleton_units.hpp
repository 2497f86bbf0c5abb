// SPDX-License-Identifier: MIT
// What every architecture on the skeleton shares outside its kernels: how its units are cut
// (embedding, each layer whole or as its attention and MLP halves, the final unit).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "model/architecture.hpp"
#include "model/decoder/block_spec.hpp"

namespace fsdp {

// A layer's tensors (names under `prefix`, e.g. "h.3.") added to the unit that holds them.
using AddLayerTensors = std::function<void(UnitLayout& unit, const std::string& prefix)>;

// [embedding, layer 0 .. L-1, final] with c.sublayer_units: each layer one unit named
// prefix(l) without its dot ("h.3"), or two: prefix(l) + attn_name ("h.3.attn") holding what
// `attn` adds and prefix(l) + "mlp" holding what `mlp` adds.
std::vector<UnitLayout> skeleton_units(const ModelConfig& m, const ModelChoices& c, UnitLayout embedding,
                                       const std::function<std::string(int l)>& prefix,
                                       const std::string& attn_name, const AddLayerTensors& attn,
                                       const AddLayerTensors& mlp, UnitLayout final_unit);

}  // namespace fsdp
