// SPDX-License-Identifier: MIT
// train.optimizer as a type, decided once from the deck (config/run_setup.cpp) and read back from
// a checkpoint's header (io/checkpoint_format.cpp): the engine, the checkpoints and the logs
// compare this, never the deck's string.
#pragma once
#include <optional>
#include <string>

namespace fsdp {

// AdamW on every tensor; Muon on the hidden 2-D matrices and AdamW on the rest (optim/muon.hpp).
enum class OptimizerKind { AdamW, Muon };

inline const char* to_string(OptimizerKind o) { return o == OptimizerKind::Muon ? "muon" : "adamw"; }

// The deck's and the checkpoint's spelling; nullopt for any other.
inline std::optional<OptimizerKind> parse_optimizer(const std::string& s) {
  if (s == "adamw") return OptimizerKind::AdamW;
  if (s == "muon") return OptimizerKind::Muon;
  return std::nullopt;
}

}  // namespace fsdp
