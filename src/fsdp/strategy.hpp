// SPDX-License-Identifier: MIT
// What each sharding strategy keeps and communicates (the table in DESIGN.md).
#pragma once
#include "config/run_setup.hpp"

namespace fsdp {

// Parameters live only as shards and are gathered per unit when used.
inline bool shards_params(Strategy s) { return s == Strategy::Zero3 || s == Strategy::Hybrid; }
// Full gradients are transient (per unit, reduce-scattered in backward) instead of persistent.
inline bool shards_grads(Strategy s) {
  return s == Strategy::Zero2 || s == Strategy::Zero3 || s == Strategy::Hybrid;
}
// Optimizer state covers only the rank's shard.
inline bool shards_optimizer(Strategy s) { return s != Strategy::DDP; }

}  // namespace fsdp
