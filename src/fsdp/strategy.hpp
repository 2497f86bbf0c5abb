// SPDX-License-Identifier: MIT
// What each sharding strategy keeps and communicates (the table in DESIGN.md).
#pragma once
#include <string>

namespace fsdp {

enum class Strategy { DDP, Zero1, Zero2, Zero3, Hybrid };

inline Strategy parse_strategy(const std::string& s) {
  if (s == "ddp") return Strategy::DDP;
  if (s == "zero1") return Strategy::Zero1;
  if (s == "zero2") return Strategy::Zero2;
  if (s == "hybrid") return Strategy::Hybrid;
  return Strategy::Zero3;  // the schema has already rejected anything else
}

// Parameters live only as shards and are gathered per unit when used.
inline bool shards_params(Strategy s) { return s == Strategy::Zero3 || s == Strategy::Hybrid; }
// Full gradients are transient (per unit, reduce-scattered in backward) instead of persistent.
inline bool shards_grads(Strategy s) {
  return s == Strategy::Zero2 || s == Strategy::Zero3 || s == Strategy::Hybrid;
}
// Optimizer state covers only the rank's shard.
inline bool shards_optimizer(Strategy s) { return s != Strategy::DDP; }

}  // namespace fsdp
